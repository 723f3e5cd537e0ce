# The layering check (cmake/Layering.cmake runs it before the build compiles):
#   cmake -DMANIFEST=<build>/layering/manifest.cmake -DSOURCE_DIR=<tree> -P cmake/layering_check.cmake
# Exit status 0 when every #include "..." of every checked file is allowed,
# else an error (status 1) with one line per wrong-way include.
#
# The rule. A library owns the folders its sources are in, and every header
# there; a program owns its own sources only (trainer/main.cc is dmlp-train's,
# the rest of trainer/ is dmlp_trainer_core's). A file may include a header
# of its owner's folders, or of a library its owner declares in
# target_link_libraries; $<LINK_ONLY:x> declares a link, not an include.
# Headers of folders no library owns (tests, third-party) are not checked.
# One folder, one library: two libraries with sources in one folder are an
# error too.
cmake_minimum_required(VERSION 3.25)
if(NOT MANIFEST OR NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DMANIFEST=FILE -DSOURCE_DIR=DIR -P layering_check.cmake")
endif()
set(layer_targets "")
include(${MANIFEST})

set(problems "")
# Folder -> library, and file -> owner.
foreach(target IN LISTS layer_targets)
  set(folders "")
  foreach(source IN LISTS layer_${target}_sources)
    get_filename_component(folder "${source}" DIRECTORY)
    list(APPEND folders "${folder}")
    set(owner_of_${source} ${target})
  endforeach()
  list(REMOVE_DUPLICATES folders)
  if(layer_${target}_type STREQUAL "EXECUTABLE")
    continue()
  endif()
  foreach(folder IN LISTS folders)
    if(DEFINED library_of_${folder} AND NOT library_of_${folder} STREQUAL target)
      string(APPEND problems "  ${folder}/ holds sources of two libraries, "
                             "${library_of_${folder}} and ${target}: one folder, one library\n")
    endif()
    set(library_of_${folder} ${target})
  endforeach()
  set(folders_of_${target} ${folders})
endforeach()

foreach(target IN LISTS layer_targets)
  # What the target may include: its own folders' libraries, then what it declares.
  set(allowed ${target})
  foreach(link IN LISTS layer_${target}_links)
    # target_link_libraries from another folder wraps its items in ::@(directory) markers.
    if(link MATCHES "^::@" OR link MATCHES "^\\$<LINK_ONLY:")
      continue()
    endif()
    list(APPEND allowed ${link})
  endforeach()

  # The files the target owns: its sources, and for a library every header and
  # source in its folders that no program claims.
  set(files "")
  foreach(source IN LISTS layer_${target}_sources)
    if(owner_of_${source} STREQUAL target)
      list(APPEND files "${source}")
    endif()
  endforeach()
  foreach(folder IN LISTS folders_of_${target})
    file(GLOB found RELATIVE "${SOURCE_DIR}"
         "${SOURCE_DIR}/${folder}/*.h" "${SOURCE_DIR}/${folder}/*.cuh"
         "${SOURCE_DIR}/${folder}/*.cc" "${SOURCE_DIR}/${folder}/*.cu")
    foreach(file IN LISTS found)
      if(NOT DEFINED owner_of_${file})
        list(APPEND files "${file}")
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES files)

  foreach(file IN LISTS files)
    if(NOT EXISTS "${SOURCE_DIR}/${file}")
      continue()  # a source the build generates, or one gone since the configure step
    endif()
    file(STRINGS "${SOURCE_DIR}/${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" header "${line}")
      if(NOT EXISTS "${SOURCE_DIR}/${header}")
        continue()  # not a path from the tree's root: a generated or system header
      endif()
      get_filename_component(folder "${header}" DIRECTORY)
      if(NOT DEFINED library_of_${folder} OR folder IN_LIST folders_of_${target})
        continue()  # no library's folder, or the target's own
      endif()
      set(owner ${library_of_${folder}})
      if(NOT owner IN_LIST allowed)
        string(APPEND problems "  ${file} includes \"${header}\", a header of ${owner} (${folder}/), "
                               "but ${target} does not declare ${owner} "
                               "(target_link_libraries in ${layer_${target}_directory}/CMakeLists.txt)\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(NOT problems STREQUAL "")
  message(FATAL_ERROR "dmlp: layering: includes that go the wrong way:\n${problems}"
          "Platform-neutral code (trainer/*.h, trainer/math/, ...) includes nothing from "
          "trainer/cpu/ or trainer/cuda/: move what it needs into a neutral header, or declare "
          "the dependency where it is right.")
endif()
