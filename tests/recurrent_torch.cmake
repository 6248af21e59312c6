# The recurrent layers against torch.nn (tests/recurrent_torch_ref.py); skipped (77) where
# Debian's python3-torch is not installed (scripts/install-deps.sh --bench).
if(TARGET test_layers_recurrent)
  add_test(NAME layers_recurrent_torch
           COMMAND sh -c "/usr/bin/python3 -c 'import torch' 2>/dev/null || exit 77; \
/usr/bin/python3 \"$1\" > \"$2\" && OTC_TORCH_REF=\"$2\" \"$3\" layers_recurrent_torch_file"
                   sh ${CMAKE_CURRENT_LIST_DIR}/recurrent_torch_ref.py
                   ${CMAKE_CURRENT_BINARY_DIR}/recurrent_torch_ref.txt
                   $<TARGET_FILE:test_layers_recurrent>)
  set_tests_properties(layers_recurrent_torch PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
