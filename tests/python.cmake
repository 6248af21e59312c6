# The otc Python package's tests: each tests/python/test_*.py under pytest with the package
# from the build tree (PYTHONPATH=build/python), one ctest test per file (python_*). They skip
# (77) without pytest, and under OTC_SANITIZE, where the extension would need the ASan runtime
# preloaded into the interpreter.
if(TARGET otc_python)
  file(GLOB OTC_PY_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/python/test_*.py)
  foreach(file ${OTC_PY_TESTS})
    get_filename_component(stem ${file} NAME_WE)
    string(REGEX REPLACE "^test_" "python_" name ${stem})
    if(OTC_SANITIZE)
      add_test(NAME ${name} COMMAND sh -c "echo 'skipped: OTC_SANITIZE build'; exit 77")
    else()
      add_test(NAME ${name}
               COMMAND sh -c "\"$1\" -c 'import pytest' 2>/dev/null || exit 77; \
exec \"$1\" -m pytest -q -p no:cacheprovider \"$2\""
                       sh ${OTC_PYTHON_EXECUTABLE} ${file})
      set_tests_properties(${name} PROPERTIES
        ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;PYTHONDONTWRITEBYTECODE=1")
    endif()
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  endforeach()
endif()
