# Helpers that keep every target built the same way: C++20, the project's warnings, and tests
# registered with CTest through GoogleTest's discovery.

function(depl_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                         $<$<BOOL:${DEPL_WERROR}>:-Werror>)
  # GCC 12 (bookworm) reports -Wrestrict false positives inside libstdc++'s std::string at -O3
  # (https://gcc.gnu.org/bugzilla/show_bug.cgi?id=105329); keep it a warning, not an error.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-error=restrict)
  endif()
endfunction()

# depl_unity(TARGET): compiles TARGET's sources in batches of DEPL_UNITY_BATCH_SIZE when
# DEPL_UNITY_BUILD is on. A batch is one translation unit: names in anonymous namespaces and
# file-local `using` declarations must not clash between the sources of one target.
function(depl_unity target)
  if(DEPL_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${DEPL_UNITY_BATCH_SIZE})
    # GCC's -Wsubobject-linkage flags a class defined outside the main file whose member has a
    # type from an anonymous namespace, an ODR hazard in a header. A batch's sources are
    # included into it, so each source's own Impl classes would be flagged although only that
    # batch defines them; builds with DEPL_UNITY_BUILD=OFF keep the check.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
    endif()
  endif()
endfunction()

# depl_precompile(TARGET): precompiles the third-party headers that most of TARGET's sources
# parse (the standard library's, nlohmann/json, fmt; spdlog where TARGET links it) when DEPL_PCH
# is on. Each target builds its own precompiled header: GCC uses one only under the flags it was
# built with, and the targets' flags differ (spdlog's and Boost's definitions, -march=native where
# the worker is linked). Our own headers stay out, so editing them rebuilds no precompiled header.
# A target compiled as one translation unit gains nothing from it and is left alone. ccache does
# not cache what compiles with a precompiled header (its default sloppiness).
function(depl_precompile target)
  if(NOT DEPL_PCH)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "\\.(cpp|cxx|cc)$")
  list(LENGTH sources units)
  get_target_property(unity ${target} UNITY_BUILD)
  if(unity)
    if(DEPL_UNITY_BATCH_SIZE EQUAL 0)
      set(units 1)
    else()
      math(EXPR units "(${units} + ${DEPL_UNITY_BATCH_SIZE} - 1) / ${DEPL_UNITY_BATCH_SIZE}")
    endif()
  endif()
  if(units LESS 2)
    return()
  endif()
  set(headers <algorithm> <chrono> <cstdint> <functional> <map> <memory> <mutex> <optional>
              <set> <string> <string_view> <unordered_map> <utility> <variant> <vector>
              <nlohmann/json.hpp> <fmt/format.h>)
  get_target_property(libs ${target} LINK_LIBRARIES)
  if("spdlog::spdlog" IN_LIST libs)
    list(APPEND headers <spdlog/spdlog.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# depl_add_library(NAME SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Public headers live in <dir>/include; sources in <dir>/src.
function(depl_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  target_compile_features(${name} PUBLIC cxx_std_20)
  depl_warnings(${name})
  depl_unity(${name})
  depl_precompile(${name})
endfunction()

# depl_add_test(NAME SOURCES ... LIBS ... [LABELS ...])
function(depl_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE DEPL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                             DEPL_BINARY_DIR="${PROJECT_BINARY_DIR}")
  depl_warnings(${name})
  # The test code itself compiles at DEPL_TEST_OPTIMIZATION in Release builds; the code under
  # test is the libraries', at the build's own level.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:${DEPL_TEST_OPTIMIZATION}>)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()

# depl_link_allocator(TARGET): links the long-running processes (the controller, and the
# executables that host the dev cluster) with gperftools' tcmalloc instead of glibc's malloc when
# DEPL_TCMALLOC is on. Both sides build and free a JSON tree per object version from several
# threads; docs/benchmarks.md ("Scale", the allocator) has the measurement that chose it.
# --no-as-needed: nothing calls tcmalloc by name, it replaces malloc when the binary is loaded.
function(depl_link_allocator target)
  if(DEPL_TCMALLOC)
    target_link_libraries(${target} PRIVATE "-Wl,--push-state,--no-as-needed"
                          PkgConfig::TCMALLOC "-Wl,--pop-state")
    target_compile_definitions(${target} PRIVATE DEPL_TCMALLOC=1)
  else()
    target_compile_definitions(${target} PRIVATE DEPL_TCMALLOC=0)
  endif()
endfunction()
