# Precompiled headers for every target with several C++ files, applied once from the top-level
# CMakeLists after all rooms are added (no room's CMakeLists names them). A cold build spends
# much of each translation unit parsing the same third-party headers (the standard library,
# abseil, gtest/gmock, nlohmann/json, protobuf, gRPC, yaml-cpp); each such target parses them
# once into its own precompiled header, chosen by what the target links (directly or through
# its libraries), and every file of the target starts from it.
#
# Off unless asked for (-DABLATE_PCH=ON), and only with GCC (the sanitizer and fuzzing builds use
# clang, which refuses a precompiled header whose -D definitions differ from the file's). With a
# precompiled header GCC 12 no longer silences its late warnings inside system headers (a
# -Wstringop-overflow false positive in std::string's operator+ fails server/core/
# script_command.cc under -Werror; the same file built without it is clean), so it stays off
# until the whole build is known clean with it. Never with ccache as the compiler launcher: ccache
# does not cache a compile that uses a precompiled header unless its sloppiness settings allow it,
# and a warm ccache already skips the parsing.
include_guard(GLOBAL)

option(ABLATE_PCH "Precompiled headers for targets with several C++ files (GCC, no ccache)" OFF)
if(ABLATE_PCH AND (NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
                   OR CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache"))
  message(STATUS "ablate: no precompiled headers (they need GCC and no ccache)")
  set(ABLATE_PCH OFF)
endif()

# Every target defined in `dir` and the folders below it, into `out`.
function(_ablate_targets_below dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _ablate_targets_below("${sub}" below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The names of every target `target` links, directly or through other targets' interfaces.
function(_ablate_link_closure target out)
  set(seen "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    if(NOT TARGET "${t}" OR "${t}" IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${t}")
    get_target_property(type ${t} TYPE)
    set(libs "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY" AND t STREQUAL target)
      get_target_property(libs ${t} LINK_LIBRARIES)
    endif()
    get_target_property(ilibs ${t} INTERFACE_LINK_LIBRARIES)
    foreach(l IN LISTS libs ilibs)
      # $<LINK_ONLY:x> and other wrappers: keep the name inside.
      string(REGEX REPLACE "^\\$<[A-Z_]+:(.*)>$" "\\1" l "${l}")
      if(l AND NOT l MATCHES "NOTFOUND$" AND NOT l MATCHES "[$<>]")
        list(APPEND todo "${l}")
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# The headers worth precompiling for a target whose link closure is `closure`.
function(_ablate_pch_headers closure out)
  set(h <algorithm> <chrono> <cstdint> <filesystem> <functional> <map> <memory> <mutex>
        <optional> <set> <sstream> <string> <string_view> <thread> <vector>)
  if(closure MATCHES "absl::status")
    list(APPEND h <absl/status/status.h> <absl/status/statusor.h> <absl/strings/str_cat.h>)
  endif()
  if(closure MATCHES "nlohmann_json")
    list(APPEND h <nlohmann/json.hpp>)
  endif()
  if(closure MATCHES "yaml-cpp")
    list(APPEND h <yaml-cpp/yaml.h>)
  endif()
  if(closure MATCHES "protobuf::libprotobuf")
    list(APPEND h <google/protobuf/message.h> <google/protobuf/generated_message_reflection.h>
                  <google/protobuf/repeated_field.h>)
  endif()
  if(closure MATCHES "gRPC::grpc\\+\\+")
    list(APPEND h <grpcpp/grpcpp.h>)
  endif()
  if(closure MATCHES "GTest::")
    list(APPEND h <gtest/gtest.h>)
  endif()
  if(closure MATCHES "GTest::gmock")
    list(APPEND h <gmock/gmock.h>)
  endif()
  set(${out} ${h} PARENT_SCOPE)
endfunction()

# Gives each library and program below the source folder with at least two C++ files its
# precompiled header (when ABLATE_PCH is on).
function(ablate_precompile_headers)
  if(NOT ABLATE_PCH)
    return()
  endif()
  _ablate_targets_below("${CMAKE_SOURCE_DIR}" targets)
  set(count 0)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    get_target_property(sources ${t} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.(cc|cpp|cxx)$")
    list(LENGTH sources n)
    get_target_property(existing ${t} PRECOMPILE_HEADERS)
    if(n LESS 2 OR existing)
      continue()
    endif()
    _ablate_link_closure(${t} closure)
    _ablate_pch_headers("${closure}" headers)
    # C++ files only; a `>` inside a generator expression is written $<ANGLE-R>.
    list(TRANSFORM headers REPLACE "^<(.*)>$" "$<$<COMPILE_LANGUAGE:CXX>:<\\1$<ANGLE-R>>")
    target_precompile_headers(${t} PRIVATE ${headers})
    math(EXPR count "${count} + 1")
  endforeach()
  message(STATUS "ablate: precompiled headers for ${count} targets")
endfunction()
