# depl_devcluster: the HTTP side of the embedded API server (Beast listener, routing, discovery,
# OpenAPI, watches, logs, fault injection) and the simulated cluster (nodes from a pools file,
# scheduler, kubelet running containers as local processes), plus the DevCluster fixture.
# Included from devcluster/CMakeLists.txt so public headers come from devcluster/include.
file(GLOB DEPL_DEVCLUSTER_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/src/server/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/sim/*.cpp)
depl_add_library(depl_devcluster
  SOURCES ${DEPL_DEVCLUSTER_SOURCES}
  PUBLIC_DEPS depl_devcluster_core depl_common
  PRIVATE_DEPS Boost::headers Boost::system OpenSSL::SSL OpenSSL::Crypto yaml-cpp spdlog::spdlog
               fmt::fmt Threads::Threads)
# Internal headers (server/..., sim/...) for this library and its white-box tests.
target_include_directories(depl_devcluster PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
