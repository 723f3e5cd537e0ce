# The image and the README: spec.json, Dockerfile and
# tools/install-deps.sh agree; run.sh and tools/main-job.sh run the CPU job end
# to end; every command of README.md and docs/*.md runs (or is marked with what runs it).
# All Python 3 standard library; the programs are this build's.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "dmlp: python3 not found; the image and README tests are not registered")
  return()
endif()
set(_dmlp_image_dir ${CMAKE_CURRENT_LIST_DIR}/image)
set(_dmlp_image_env
  "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;DMLP_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1"
  "DMLP_BUILD_DIR=${CMAKE_BINARY_DIR};DMLP_CMAKE=${CMAKE_COMMAND}")
# name                 unittest target (module[.Class])   what it runs
# image.agreement      image_agreement                    spec.json vs Dockerfile vs install-deps
# image.run_sh         test_scripts.RunSh                 run.sh
# image.main_job       test_scripts.MainJob               tools/main-job.sh
# image.installed      test_scripts.InstalledLayout       cmake --install + run.sh, as in the image
# image.readme         readme_test                        README.md's and docs/'s commands, tables, links
foreach(pair agreement:image_agreement run_sh:test_scripts.RunSh main_job:test_scripts.MainJob
             installed:test_scripts.InstalledLayout readme:readme_test)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 target)
  add_test(NAME image.${name}
           COMMAND ${Python3_EXECUTABLE} -m unittest -v ${target}
           WORKING_DIRECTORY ${_dmlp_image_dir})
  set_tests_properties(image.${name} PROPERTIES
    ENVIRONMENT "${_dmlp_image_env}" TIMEOUT 300 LABELS "e2e;image")
endforeach()
# tools/rehearse.sh --cuda-host called wrongly or failing: a usage error, and
# no temporary folder left (tests/e2e/image/test_rehearse_cuda_host.py).
add_test(NAME image.rehearse_cuda_host
         COMMAND ${Python3_EXECUTABLE} -m unittest -v test_rehearse_cuda_host
         WORKING_DIRECTORY ${_dmlp_image_dir})
set_tests_properties(image.rehearse_cuda_host PROPERTIES
  ENVIRONMENT "${_dmlp_image_env}" TIMEOUT 120 LABELS "e2e;image")
