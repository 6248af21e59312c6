# Conv2d and the pools against torch.nn.functional (tests/conv_torch_ref.py): forward and
# gradients, strides, paddings, dilations, groups; skipped (77) where Debian's python3-torch
# is not installed (scripts/install-deps.sh --bench).
if(TARGET test_conv)
  add_test(NAME conv_torch
           COMMAND sh -c "/usr/bin/python3 -c 'import torch' 2>/dev/null || exit 77; \
/usr/bin/python3 \"$1\" > \"$2\" && OTC_TORCH_REF=\"$2\" \"$3\" conv_torch_file"
                   sh ${CMAKE_CURRENT_LIST_DIR}/conv_torch_ref.py
                   ${CMAKE_CURRENT_BINARY_DIR}/conv_torch_ref.txt
                   $<TARGET_FILE:test_conv>)
  set_tests_properties(conv_torch PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
