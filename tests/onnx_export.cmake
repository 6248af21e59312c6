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

# Export then import (tests/onnx_export/roundtrip.c): the export models, neat-python's
# feedforward, recurrent and CTRNN fixtures and the shipped double-pole champion come back as
# the same Neurons, activations and Delays and compute the same outputs on the interpreter.
if(TARGET otc_cli)
  add_executable(onnx_roundtrip ${CMAKE_CURRENT_SOURCE_DIR}/onnx_export/roundtrip.c)
  target_link_libraries(onnx_roundtrip PRIVATE otc)
  set(rt ${CMAKE_CURRENT_BINARY_DIR}/onnx_roundtrip_models)
  set(np ${CMAKE_CURRENT_SOURCE_DIR}/neat_python)
  add_test(NAME onnx_export_roundtrip
           COMMAND sh -c "mkdir -p '${rt}' && \"$0\" '${rt}' && exec \"$1\" \
'${rt}/elementwise.otm' '${rt}/neurons.otm' '${rt}/structural.otm' '${rt}/cnn.otm' \
'${rt}/rnn.otm' '${rt}/lstm.otm' '${rt}/gru.otm' '${rt}/neuron_loop.otm' '${rt}/taken_names.otm' \
'${np}/feedforward_101_000.json' '${np}/feedforward_101_013.json' '${np}/feedforward_101_027.json' \
'${np}/recurrent_101_000.json' '${np}/recurrent_101_013.json' '${np}/recurrent_101_027.json' \
'${np}/ctrnn_101_000.json' '${np}/ctrnn_101_013.json' '${np}/ctrnn_101_027.json' \
'${PROJECT_SOURCE_DIR}/examples/deploy/dpnv_champion.otm'"
                   $<TARGET_FILE:make_export_models> $<TARGET_FILE:onnx_roundtrip>)
endif()
