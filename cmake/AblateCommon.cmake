# Settings shared by the whole build and by the trainer's standalone build.
include_guard(GLOBAL)

# One version for every binary, also in the trainer's standalone build.
set(ABLATE_VERSION 0.1.0)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# Unity builds: each target's sources are compiled eight to a translation unit, so the heavy
# headers (gRPC, protobuf, abseil, nlohmann/json, CLI11, gtest) are parsed and their templates
# instantiated once per eight files instead of once per file. On 2 cores this halves the build's
# compile time (bench/build/NOTES.md). Sources that cannot share a unit (protoc's output) say so
# where they are added; anonymous-namespace names must then differ between a target's files.
# -DCMAKE_UNITY_BUILD=OFF builds file by file (quicker to rebuild after editing one file).
if(NOT DEFINED CMAKE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
endif()
if(NOT DEFINED CMAKE_UNITY_BUILD_BATCH_SIZE)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()

# The repository root is the include root: #include "trainer/config/knob_schema.h".
get_filename_component(ABLATE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

# CUDA is optional: compiled when nvcc is found (sm_90 unless CMAKE_CUDA_ARCHITECTURES says so).
# -DABLATE_CUDA=OFF leaves it out even where nvcc is (the sanitizer build: nvcc takes no -fsanitize).
option(ABLATE_CUDA "Compile the CUDA backend when nvcc is found" ON)
if(ABLATE_CUDA AND NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
   AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
if(ABLATE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
endif()
if(ABLATE_CUDA AND CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 20)
  set(ABLATE_HAVE_CUDA ON)
else()
  set(ABLATE_HAVE_CUDA OFF)
endif()
message(STATUS "ablate: CUDA ${ABLATE_HAVE_CUDA}")

# Project code is warning-clean; third-party headers come in as SYSTEM includes.
# GCC 12 reports false -Wrestrict overlaps inside std::string concatenation at -O3 (GCC bug
# 105329), so that one diagnostic is off. Warnings are errors here and in CI; a machine with a
# newer compiler than the one the code was checked with (a GPU machine's, say) turns that off
# with -DABLATE_WERROR=OFF, so one new warning does not cost a build it cannot afford to lose.
# Clang also checks the lock annotations (-Wthread-safety: ABSL_GUARDED_BY on absl::Mutex, and
# common/thread_annotations.h where there is no abseil); GCC ignores them.
option(ABLATE_WERROR "Treat warnings in project code as errors" ON)
if(ABLATE_WERROR)
  set(ABLATE_WERROR_FLAG -Werror)
else()
  set(ABLATE_WERROR_FLAG "")
endif()
function(ablate_warnings target)
  if(ABLATE_FUZZ)
    return()
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra ${ABLATE_WERROR_FLAG}>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>
    # In a unity build a file's anonymous-namespace types are seen from templates of another.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<BOOL:${CMAKE_UNITY_BUILD}>>:
      -Wno-subobject-linkage>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:Clang>>:-Wthread-safety>)
endfunction()

# ASan+UBSan (./dev.sh sanitize, into build-asan): every UBSan report aborts like an ASan one, so
# it fails the test instead of scrolling past. -g1: reports carry file:line. ABLATE_SANITIZE_OPT
# (-O1 unless told): -O1 is quicker to compile than -O3 under instrumentation; -O0 about half
# again (what CI uses, with clang: tests/sanitize/NOTES.md).
set(ABLATE_SANITIZE_OPT "-O1" CACHE STRING "Optimization level of the sanitizer build")
if(ABLATE_SANITIZE STREQUAL "address")
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:C,CXX>:${ABLATE_SANITIZE_OPT}>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-g1>)
  add_link_options(-fsanitize=address,undefined)
elseif(ABLATE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread)
  add_link_options(-fsanitize=thread)
endif()

# Fuzzing (tests/fuzz, bench/fuzz/run.sh), with clang: every library instrumented for libFuzzer's
# coverage and built with ASan+UBSan; the fuzz_* binaries link libFuzzer itself. Clang's warnings
# differ from GCC's, so they do not fail this build.
option(ABLATE_FUZZ "Build the libFuzzer targets (clang only)" OFF)
if(ABLATE_FUZZ)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()

# nlohmann/json: the Debian package's CMake config, or a header directory carried to the machine
# (-DABLATE_JSON_INCLUDE_DIR=...), since GPU machines may have no -dev packages.
find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND AND NOT TARGET nlohmann_json::nlohmann_json)
  find_path(ABLATE_JSON_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED GLOBAL)
  target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${ABLATE_JSON_INCLUDE_DIR})
endif()

find_package(GTest QUIET)
find_package(Threads REQUIRED)

