# ONNX export (`otc export`, docs/onnx-export.md): tests/onnx_export/make_export_models.c writes
# models covering every op otc exports; tests/onnx_export_check.py exports them and the
# neat-python fixtures, checks each with the onnx package (checker, strict shape inference),
# runs it with its own numpy evaluator of the ONNX operators and compares with `otc run`.
# Skipped (77) without Debian's python3-onnx and python3-numpy.
if(TARGET otc_cli)
  add_executable(make_export_models ${CMAKE_CURRENT_SOURCE_DIR}/onnx_export/make_export_models.c)
  target_link_libraries(make_export_models PRIVATE otc)
  add_test(NAME onnx_export_check
           COMMAND sh -c "[ -x /usr/bin/python3 ] || exit 77; exec /usr/bin/python3 \"$@\"" sh
                   ${CMAKE_CURRENT_SOURCE_DIR}/onnx_export_check.py
                   $<TARGET_FILE:otc_cli> $<TARGET_FILE:make_export_models>
                   ${CMAKE_CURRENT_SOURCE_DIR}/neat_python ${CMAKE_CURRENT_BINARY_DIR}/onnx_export)
  set_tests_properties(onnx_export_check PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# `otc export` on bad input and at its limits (tests/onnx_export/export_cli.sh), one test per case.
find_program(OTC_EXPORT_BASH bash)
if(TARGET otc_cli AND OTC_EXPORT_BASH)
  foreach(case usage bad_models refused outputs huge_values)
    add_test(NAME onnx_export_cli_${case}
             COMMAND ${OTC_EXPORT_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/onnx_export/export_cli.sh
                     $<TARGET_FILE:otc_cli> $<TARGET_FILE:make_export_models> ${case})
  endforeach()
endif()
