# Conv2d and the pools against torch.nn.functional (tests/conv_torch_ref.py): forward and
# gradients, strides, paddings, dilations, groups.
otc_add_torch_ref_test(conv_torch test_conv conv_torch_ref.py conv_torch_file)
