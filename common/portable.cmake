# The parts of common/ that need nothing but a C++ compiler, so that the trainer (which builds
# alone on GPU machines: cmake -S trainer) can use them: "did you mean" distances, the one
# duration grammar, a text cut into lines, paths made absolute (and the header-only lock annotations,
# thread_annotations.h). Included by trainer/CMakeLists.txt and common/CMakeLists.txt.
include_guard(GLOBAL)
add_library(ablate_portable STATIC
  ${CMAKE_CURRENT_LIST_DIR}/absolute_path.cc
  ${CMAKE_CURRENT_LIST_DIR}/edit_distance.cc
  ${CMAKE_CURRENT_LIST_DIR}/spec/duration.cc
  ${CMAKE_CURRENT_LIST_DIR}/text_lines.cc)
target_include_directories(ablate_portable PUBLIC ${ABLATE_ROOT})
ablate_warnings(ablate_portable)
