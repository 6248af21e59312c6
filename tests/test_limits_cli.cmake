# `otc` on inputs at and past the limits (see otc/limits.h and tests/test_limits.c): a CSV
# target column's meaning does not depend on its first cell, word class labels work in
# `otc evolve --task csv:`, a model needing more memory than the machine is refused before
# anything is allocated, and numeric options out of range are exit 2 naming the option.
# The C tests of tests/test_limits.c get a TIMEOUT that a return to quadratic work would hit.
set_tests_properties(
  limits_100000_metadata_keys_save_and_load limits_one_node_past_max_nodes_refused
  limits_20000_named_nodes_load_and_find limits_20000_node_chain_emits_c
  limits_csv_50000_columns_chosen_by_name limits_65536_input_keys_import
  PROPERTIES TIMEOUT 60)

find_program(OTC_LIMITS_BASH bash)
if(TARGET otc_cli AND OTC_LIMITS_BASH)
  add_executable(make_limit_models ${CMAKE_CURRENT_SOURCE_DIR}/cli/make_limit_models.c)
  target_link_libraries(make_limit_models PRIVATE otc)
  set(otc $<TARGET_FILE:otc_cli>)
  set(src ${PROJECT_SOURCE_DIR})
  set(work ${CMAKE_CURRENT_BINARY_DIR}/limits_cli)
  # expect CODE CMD...: run CMD with output in $W/out and $W/err; fail unless it exits CODE.
  set(prelude "set -u; W=$(mktemp -d '${work}.XXXXXX') || exit 1; trap 'rm -rf \"$W\"' EXIT; \
expect() { want=$1; shift; \"$@\" >\"$W/out\" 2>\"$W/err\"; got=$?; if [ $got != $want ]; then \
echo \"exit $got, wanted $want: $*\"; cat \"$W/out\" \"$W/err\"; exit 1; fi; }; \
has() { grep -qF -- \"$2\" \"$W/$1\" || { echo \"$1 lacks '$2'\"; cat \"$W/out\" \"$W/err\"; exit 1; }; }; \
printf 'a,b,y\\n0,0,0\\n0,1,1\\n1,0,1\\n1,1,0\\n' > \"$W/xor.csv\"; ")
  set(xor_model "expect 0 '${otc}' evolve '${src}/examples/neat/xor.ini' --task xor --seed 1 --threads 1 --out \"$W/xor.otm\" && ")
  set(limits_cli_cases
      csv_nan_first_in_target_is_an_error
      "${xor_model}printf 'a,b,y\\n0.5,0.5,nan\\n0,0,0\\n0,1,1\\n1,0,1\\n' > \"$W/n.csv\" && expect 2 '${otc}' train \"$W/xor.otm\" --data \"$W/n.csv\" --target y --val-split 0 --out \"$W/t.otm\" && has err 'n.csv:2: column 3 (y)' && has err '\"nan\"' && test ! -e \"$W/t.otm\""
      csv_word_after_numbers_in_target_is_an_error
      "${xor_model}printf 'a,b,y\\n0,0,0\\n0,1,1\\n1,0,dog\\n' > \"$W/m.csv\" && expect 2 '${otc}' train \"$W/xor.otm\" --data \"$W/m.csv\" --target y --val-split 0 --out \"$W/t.otm\" && has err 'm.csv:4: column 3 (y)' && has err 'line 2 reads as a number'"
      csv_number_after_words_in_target_is_an_error
      "${xor_model}printf 'a,b,y\\n0,0,cat\\n0,1,dog\\n1,0,7\\n' > \"$W/m.csv\" && expect 2 '${otc}' train \"$W/xor.otm\" --data \"$W/m.csv\" --target y --val-split 0 --out \"$W/t.otm\" && has err 'm.csv:2: column 3 (y)' && has err 'line 4 reads as a number'"
      run_drop_leaves_the_column_unread
      "${xor_model}printf 'a,b,y\\n0,0,nan\\n0,1,oops\\n' > \"$W/d.csv\" && expect 0 '${otc}' run \"$W/xor.otm\" --input \"$W/d.csv\" --drop y && test $(wc -l < \"$W/out\") = 3"
      evolve_csv_word_class_labels
      "awk -F, 'NR == 1 { print } NR > 1 { print $1 \",\" $2 \",\" ($3 == 1 ? \"inside\" : \"outside\") }' '${src}/examples/data/circle.csv' > \"$W/words.csv\" && expect 1 '${otc}' evolve '${src}/examples/neat/circle.ini' --task csv:\"$W/words.csv\" --seed 1 --threads 1 --generations 2 --out \"$W/c.otm\" && has out 'csv: not solved after 2 generation(s)' && test -s \"$W/c.otm\""
      bench_refuses_a_model_larger_than_memory
      "'$<TARGET_FILE:make_limit_models>' \"$W\" && expect 2 '${otc}' bench \"$W/huge.otm\" --batch 1024 --no-c && has err 'huge.otm: benchmarking at batch 1024 needs about' && has err 'this machine has'"
      run_and_train_refuse_past_the_memory_limit
      "${xor_model}export OTC_MEMORY_LIMIT=16 && expect 2 '${otc}' run \"$W/xor.otm\" --input \"$W/xor.csv\" --drop y && has err 'xor.otm: running at batch 4 needs about' && has err 'OTC_MEMORY_LIMIT' && expect 2 '${otc}' train \"$W/xor.otm\" --data \"$W/xor.csv\" --target y --val-split 0 --out \"$W/t.otm\" && has err 'xor.otm: training at batch 4 needs about' && test ! -e \"$W/t.otm\""
      compile_refuses_a_workspace_larger_than_memory
      "'$<TARGET_FILE:make_limit_models>' \"$W\" && expect 2 '${otc}' compile \"$W/huge.otm\" --emit-c \"$W/c\" --name m --batch 1024 && has err \"huge.otm: the emitted code's workspace at batch 1024 needs about\" && test ! -e \"$W/c\""
      compile_option_ranges
      "${xor_model}expect 2 '${otc}' compile \"$W/xor.otm\" --emit-c \"$W/c\" --name m --batch 0 && has err '--batch' && for a in '--lr -5' '--momentum 1' '--eps 0' '--beta1 -0.1'
do expect 2 '${otc}' compile \"$W/xor.otm\" --emit-c \"$W/c\" --name m --train $a && has err \"\${a% *} must be\" || exit 1
done
for a in '--lr nan' '--lr inf' '--weight-decay nan'
do expect 2 '${otc}' compile \"$W/xor.otm\" --emit-c \"$W/c\" --name m --train $a && has err \"bad value '\${a#* }' for \${a% *} (expected a finite number\" || exit 1
done
test ! -e \"$W/c\""
      bench_option_ranges
      "${xor_model}for a in '--block-ms 0' '--block-ms nan' '--lr nan' '--lr -1' '--batch 0' '--random -3' '--connections -1'
do expect 2 '${otc}' bench \"$W/xor.otm\" $a && has err \"\${a% *}\" || exit 1
done")
  list(LENGTH limits_cli_cases n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET limits_cli_cases ${i} name)
    list(GET limits_cli_cases ${j} body)
    add_test(NAME limits_cli_${name} COMMAND ${OTC_LIMITS_BASH} -c "${prelude}${body}")
    set_tests_properties(limits_cli_${name} PROPERTIES TIMEOUT 120)
  endforeach()
endif()
