// The fuzz targets' shared frame. Each target is a plain function `depl::fuzz::<name>(data,
// size)`; the libFuzzer build (DEPL_LIBFUZZER) also gets `LLVMFuzzerTestOneInput` calling it,
// and the gcc replay test (tests/fuzz_replay) calls the functions directly on the corpus, so the
// same source builds both ways and cannot rot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace depl::fuzz {

int job_spec(const std::uint8_t* data, std::size_t size);
int pools(const std::uint8_t* data, std::size_t size);
int quantity(const std::uint8_t* data, std::size_t size);
int kubeconfig(const std::uint8_t* data, std::size_t size);
int watch_stream(const std::uint8_t* data, std::size_t size);
int progress_endpoint(const std::uint8_t* data, std::size_t size);
int solve(const std::uint8_t* data, std::size_t size);

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return size == 0 ? std::string_view()
                   : std::string_view(reinterpret_cast<const char*>(data), size);
}

// A broken promise of the code under test (not of the input): report and abort, which libFuzzer
// records as a crash with the input that caused it.
[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

inline void check(bool holds, const char* what) {
  if (!holds) violated(what);
}

}  // namespace depl::fuzz

#ifdef DEPL_LIBFUZZER
#define DEPL_FUZZ_ENTRY(name)                                                         \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    return ::depl::fuzz::name(data, size);                                            \
  }
#else
#define DEPL_FUZZ_ENTRY(name)
#endif
