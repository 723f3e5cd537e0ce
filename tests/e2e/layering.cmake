# The layering check (cmake/Layering.cmake, cmake/layering_check.cmake): a
# wrong-way include planted in a scratch copy of the tree must be refused,
# with a message naming the file, the include and the missing dependency
# (tests/e2e/layering/planted_include_test.cmake says what each case plants).
# The check itself runs in every build, before anything compiles.
foreach(case clean plan_includes_cuda math_includes_cpu output_includes_verify folder_of_two_libraries)
  add_test(NAME e2e.layering.${case}
           COMMAND ${CMAKE_COMMAND} -DCASE=${case} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                   -DMANIFEST=${DMLP_LAYER_MANIFEST} -DCHECK=${PROJECT_SOURCE_DIR}/cmake/layering_check.cmake
                   -DSCRATCH=${CMAKE_CURRENT_BINARY_DIR}/layering-${case}
                   -P ${CMAKE_CURRENT_LIST_DIR}/layering/planted_include_test.cmake)
endforeach()
