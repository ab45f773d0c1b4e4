# Sanitizer and fuzzing builds, each in its own build directory (see the Makefile):
#   -DHOOKBOX_SANITIZE=address   ASan + UBSan, the whole suite
#   -DHOOKBOX_SANITIZE=thread    TSan, the concurrency and worker tests
#   -DHOOKBOX_FUZZ=ON            libFuzzer harnesses in tests/fuzz/ (clang only)
set(HOOKBOX_SANITIZE "" CACHE STRING "address (ASan+UBSan) or thread (TSan)")
option(HOOKBOX_FUZZ "build the libFuzzer harnesses (clang)" OFF)

if(HOOKBOX_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(HOOKBOX_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT HOOKBOX_SANITIZE STREQUAL "")
  message(FATAL_ERROR "HOOKBOX_SANITIZE must be address or thread")
endif()

if(HOOKBOX_FUZZ)
  # Coverage for the fuzzer on everything hookbox compiles; the fuzzer's main only in the
  # harnesses (tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
