# The recurrent layers against torch.nn (tests/recurrent_torch_ref.py).
otc_add_torch_ref_test(layers_recurrent_torch test_layers_recurrent recurrent_torch_ref.py
                       layers_recurrent_torch_file)
