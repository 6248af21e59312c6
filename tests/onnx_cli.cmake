# `otc import` of ONNX models through the CLI: a PyTorch fixture (tests/onnx/) imported, run,
# summarised and compiled to C; an imported GRU run and trained on sequences; bad files and neat-python-only options exit 2 naming the
# file. Each case is one ctest test named onnx_cli_*.
find_program(OTC_ONNX_CLI_BASH bash)
if(TARGET otc_cli AND OTC_ONNX_CLI_BASH)
  set(otc ${PROJECT_BINARY_DIR}/otc)
  set(fx ${PROJECT_SOURCE_DIR}/tests/onnx)
  set(work ${CMAKE_CURRENT_BINARY_DIR}/onnx_cli)
  set(prelude "set -u; W=$(mktemp -d '${work}.XXXXXX') || exit 1; trap 'rm -rf \"$W\"' EXIT; \
expect() { want=$1; shift; \"$@\" >\"$W/out\" 2>\"$W/err\"; got=$?; if [ $got != $want ]; then \
echo \"exit $got, wanted $want: $*\"; cat \"$W/out\" \"$W/err\"; exit 1; fi; }; \
has() { grep -qF -- \"$2\" \"$W/$1\" || { echo \"$1 lacks '$2'\"; cat \"$W/out\" \"$W/err\"; exit 1; }; }; ")
  set(onnx_cli_cases
      mlp_imports_runs_compiles
      "expect 0 '${otc}' import '${fx}/mlp.onnx' -o \"$W/m.otm\" && has out 'ONNX: 1 inputs, 1 outputs' && printf '0.1,0.2,0.3,0.4,0.5,0.6\\n-1,0,1,2,-2,0.5\\n' > \"$W/in.csv\" && expect 0 '${otc}' run \"$W/m.otm\" -i \"$W/in.csv\" --no-header && has out 'y0_0,y0_1,y0_2' && expect 0 '${otc}' summary \"$W/m.otm\" && has out 'a.weight' && expect 0 '${otc}' compile \"$W/m.otm\" --emit-c \"$W/c\""
      lenet_imports
      "expect 0 '${otc}' import '${fx}/lenet_bn.onnx' -o \"$W/l.otm\" && expect 0 '${otc}' summary \"$W/l.otm\" && has out 'conv2d'"
      not_onnx_exits_2
      "printf 'garbage' > \"$W/bad.onnx\" && expect 2 '${otc}' import \"$W/bad.onnx\" -o \"$W/b.otm\" && has err 'bad.onnx: not an ONNX model' && test ! -e \"$W/b.otm\""
      truncated_exits_2
      "head -c 700 '${fx}/lenet_bn.onnx' > \"$W/t.onnx\" && expect 2 '${otc}' import \"$W/t.onnx\" -o \"$W/t.otm\" && has err 't.onnx' && test ! -e \"$W/t.otm\""
      # the imported GRU is a step graph: it runs and trains (through time) on sequences
      gru_runs_and_trains_on_sequences
      "expect 0 '${otc}' import '${fx}/gru.onnx' -o \"$W/g.otm\" && printf 'seq,a,b,c,t0,t1\\n1,0.1,0.2,0.3,0.1,0.5\\n1,-0.4,0.5,0.1,-0.3,0.5\\n1,0.2,0.9,-0.5,-0.1,0.5\\n2,0.7,-0.2,0.4,0.7,0.5\\n2,-0.1,0.3,0.3,0.6,0.5\\n2,0.3,0.1,-0.8,0.9,0.5\\n3,-0.6,0.4,0.2,-0.6,0.5\\n3,0.5,0.5,0.5,-0.1,0.5\\n' > \"$W/s.csv\" && expect 0 '${otc}' run \"$W/g.otm\" -i \"$W/s.csv\" --sequence seq --features a,b,c && has out 'y0_0,y0_1' && expect 0 '${otc}' train \"$W/g.otm\" --data \"$W/s.csv\" --target t0,t1 --sequence seq --epochs 3 --val-split 0 --out \"$W/t.otm\" && has out 'through time' && test -s \"$W/t.otm\""
      # --train-only: a prefix naming no parameter, or without --train, is refused
      train_only_refused
      "expect 0 '${otc}' import '${fx}/mlp.onnx' -o \"$W/m.otm\" && expect 2 '${otc}' compile \"$W/m.otm\" --emit-c \"$W/c\" --train --train-only nope && has err \"no trainable parameter of $W/m.otm starts with 'nope' (its parameters: 'a.weight'\" && test ! -e \"$W/c\" && expect 2 '${otc}' compile \"$W/m.otm\" --emit-c \"$W/c\" --train-only a. && has err '--train-only goes with --train' && printf '1,2,3,4,5,6,0\\n' > \"$W/d.csv\" && expect 2 '${otc}' train \"$W/m.otm\" --data \"$W/d.csv\" --target 6 --no-header --train-only ,, --out \"$W/t.otm\" && has err 'needs a parameter name prefix' && test ! -e \"$W/t.otm\""
      # a bidirectional recurrent layer is refused naming the node and the direction
      bidirectional_refused
      "expect 2 '${otc}' import '${fx}/gru_bidir.onnx' -o \"$W/b.otm\" && has err \"node '/r/GRU'\" && has err 'GRU, opset 13): direction=bidirectional is not supported (forward only)' && test ! -e \"$W/b.otm\""
      neat_python_options_refused
      "expect 2 '${otc}' import '${fx}/mlp.onnx' -o \"$W/m.otm\" --state-io && has err 'for neat-python networks, not ONNX'")
  list(LENGTH onnx_cli_cases n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET onnx_cli_cases ${i} name)
    list(GET onnx_cli_cases ${j} body)
    add_test(NAME onnx_cli_${name} COMMAND ${OTC_ONNX_CLI_BASH} -c "${prelude}${body}")
    set_tests_properties(onnx_cli_${name} PROPERTIES TIMEOUT 120)
  endforeach()
endif()

# The on-device fine-tuning example (examples/onnx_finetune/finetune.c) built for the host on a
# tiny Fashion-MNIST subset: its loss decreases and its model matches `otc train
# --train-only` after the same steps (tests/onnx_finetune.sh; skipped without the data set).
if(TARGET otc_cli)
  add_test(NAME onnx_finetune_matches_train
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/onnx_finetune.sh $<TARGET_FILE:otc_cli>
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(onnx_finetune_matches_train PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
