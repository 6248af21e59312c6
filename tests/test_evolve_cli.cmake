# `otc evolve` exit codes, end to end through the built binary: 0 solved, 1 not solved, 2 bad
# input (unknown task, missing config, unknown key named with its section and line, hostile
# options, config lines and checkpoints), and --out writing a model `otc summary` can read. Each case is one ctest test named neat_cli_*.
find_program(OTC_NEAT_CLI_BASH bash)
if(TARGET otc_cli AND OTC_NEAT_CLI_BASH)
  set(otc ${PROJECT_BINARY_DIR}/otc)
  set(examples ${PROJECT_SOURCE_DIR}/examples/neat)
  set(work ${CMAKE_CURRENT_BINARY_DIR}/neat_cli)
  # expect CODE CMD...: run CMD with output in $W/out and $W/err; fail unless it exits CODE.
  set(prelude "set -u; W=$(mktemp -d '${work}.XXXXXX') || exit 1; trap 'rm -rf \"$W\"' EXIT; \
expect() { want=$1; shift; \"$@\" >\"$W/out\" 2>\"$W/err\"; got=$?; if [ $got != $want ]; then \
echo \"exit $got, wanted $want: $*\"; cat \"$W/out\" \"$W/err\"; exit 1; fi; }; \
has() { grep -qF -- \"$2\" \"$W/$1\" || { echo \"$1 lacks '$2'\"; cat \"$W/out\" \"$W/err\"; exit 1; }; }; ")

  set(neat_cli_cases
      solved_xor_exits_0
      "expect 0 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 1 --threads 1 && has out 'xor: solved'"
      unsolved_exits_1
      "expect 1 '${otc}' evolve '${examples}/dpnv.ini' --task dpnv --seed 1 --generations 1 --threads 1 && has out 'not solved'"
      unknown_task_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task no_such_task && has err 'no_such_task'"
      missing_config_exits_2
      "expect 2 '${otc}' evolve \"$W/missing.ini\" --task xor && has err 'missing.ini'"
      unknown_key_exits_2
      "cp '${examples}/xor.ini' \"$W/bad.ini\" && echo 'bogus_key = 1' >> \"$W/bad.ini\" && n=$(wc -l < \"$W/bad.ini\") && expect 2 '${otc}' evolve \"$W/bad.ini\" --task xor && has err \"bad.ini:$n:\" && has err '[DefaultReproduction]' && has err 'bogus_key: unknown key'"
      out_writes_loadable_model
      "expect 0 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 2 --threads 1 --out \"$W/best.otm\" && test -s \"$W/best.otm\" && expect 0 '${otc}' summary \"$W/best.otm\" && has out 'genome (NEAT)'"
      # NSGA-II's front: each member a loadable model, the CSV and the plot; a budget chooses.
      front_written_and_chosen
      "sed 's/^no_fitness_termination = true/&\\nselection = nsga2\\nobjectives = fitness, connections/' '${examples}/xor.ini' > \"$W/n.ini\" && expect 0 '${otc}' evolve \"$W/n.ini\" --task xor --seed 1 --threads 1 --front \"$W/f\" --max-connections 3 && has out 'chosen (budget): member ' && has out '3 enabled connection(s)' && head -1 \"$W/f/front.csv\" | grep -q '^member,file,generation,fitness,connections' && test -s \"$W/f/front.svg\" && expect 0 '${otc}' summary \"$W/f/member-0.otm\" && expect 0 '${otc}' summary \"$W/f/chosen.otm\" && expect 1 '${otc}' evolve \"$W/n.ini\" --task xor --seed 1 --threads 1 --front \"$W/g\" --max-connections 0 && has out 'no member within the budget'"
      # The csv task's front: each member's validation accuracy in front.csv and front.svg; the
      # solver, simplified, is on the front: its last member reaches target_accuracy (0.95).
      front_val_accuracy_on_csv
      "sed 's/^no_fitness_termination = true/&\\nselection = nsga2\\nobjectives = fitness, connections/' '${examples}/circle_hybrid.ini' > \"$W/c.ini\" && expect 0 '${otc}' evolve \"$W/c.ini\" --task 'csv:${PROJECT_SOURCE_DIR}/examples/data/circle.csv' --seed 1 --threads 1 --generations 60 --front \"$W/f\" && head -1 \"$W/f/front.csv\" | grep -q ',cost,val_accuracy$' && grep -q 'val_accuracy' \"$W/f/front.svg\" && awk -F, 'NR > 1 && ($9 < 0 || $9 > 1) { bad = 1 } NR > 1 { last = $9 } END { exit bad || !(last >= 0.95) }' \"$W/f/front.csv\""
      nsga2_checkpoint_resumes_exactly
      "sed 's/^no_fitness_termination = true/&\\nselection = nsga2\\nobjectives = fitness, connections/' '${examples}/xor.ini' > \"$W/n.ini\" && expect 0 '${otc}' evolve \"$W/n.ini\" --task xor --seed 5 --threads 1 --checkpoint-every 5 --checkpoint-prefix \"$W/ck-\" && cp \"$W/out\" \"$W/ref\" && grep -q '\"selection\":\"nsga2\"' \"$W/ck-5.json\" && expect 0 '${otc}' evolve \"$W/n.ini\" --task xor --seed 5 --threads 2 --resume \"$W/ck-5.json\" && cmp \"$W/out\" \"$W/ref\" && expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 5 --resume \"$W/ck-5.json\" && has err 'selection'"
      # The novelty archive and the tracked front travel in checkpoints: a resumed run (on
      # another thread count) ends as the straight one; a checkpoint without its archive is
      # refused, naming the field.
      novelty_checkpoint_resumes_exactly
      "expect 1 '${otc}' evolve '${examples}/maze.ini' --task maze:medium --seed 3 --threads 1 --generations 6 --checkpoint-every 3 --checkpoint-prefix \"$W/ck-\" && cp \"$W/out\" \"$W/ref\" && grep -q '\"novelty\":{\"dim\":2' \"$W/ck-3.json\" && expect 1 '${otc}' evolve '${examples}/maze.ini' --task maze:medium --seed 3 --threads 2 --generations 6 --resume \"$W/ck-3.json\" && cmp \"$W/out\" \"$W/ref\" && sed 's/\"novelty\":/\"was\":/' \"$W/ck-3.json\" > \"$W/bad.json\" && expect 2 '${otc}' evolve '${examples}/maze.ini' --task maze:medium --seed 3 --resume \"$W/bad.json\" && has err 'bad.json: novelty: missing'"
      front_checkpoint_resumes_exactly
      "sed 's/^no_fitness_termination = true/&\\nselection = nsga2\\nobjectives = fitness, connections/' '${examples}/xor.ini' > \"$W/n.ini\" && expect 1 '${otc}' evolve \"$W/n.ini\" --task xor --seed 1 --threads 1 --generations 12 --front \"$W/a\" --checkpoint-every 6 --checkpoint-prefix \"$W/ck-\" && grep -q '\"front\":.{\"generation\":0' \"$W/ck-6.json\" && expect 1 '${otc}' evolve \"$W/n.ini\" --task xor --seed 1 --threads 2 --generations 12 --front \"$W/b\" --resume \"$W/ck-6.json\" && cmp \"$W/a/front.csv\" \"$W/b/front.csv\" && cmp \"$W/a/chosen.otm\" \"$W/b/chosen.otm\""
      selection_options_refused_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --max-cost 10 && has err 'choose from --front' && expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --maze-svg \"$W/m.svg\" && has err 'is for --task maze' && expect 2 '${otc}' evolve '${examples}/maze.ini' --task xor && has err 'num_inputs'"
      maze_svg_written
      "sed 's/^pop_size .*/pop_size = 30/' '${examples}/maze.ini' > \"$W/m.ini\" && expect 0 '${otc}' evolve \"$W/m.ini\" --task maze:tiny --seed 3 --threads 1 --maze-svg \"$W/m.svg\" && has out 'maze:tiny: solved' && grep -q '<polyline' \"$W/m.svg\" && grep -q '#3060c0' \"$W/m.svg\""
      # exec: environments give behaviours on 'bc' lines; one that gives none is refused.
      novelty_exec_bc_lines
      "sed 's/^no_fitness_termination = true/&\\nselection = novelty\\nnovelty_threshold = 0.05/' '${examples}/xor.ini' > \"$W/x.ini\" && printf 'while read w a\\073 do case $w in reset) echo \"obs 0 1\"\\073\\073 act) echo \"bc $a\"\\073 echo \"step $a 1\"\\073\\073 esac\\073 done\\n' > \"$W/env.sh\" && expect 1 '${otc}' evolve \"$W/x.ini\" --task \"exec:sh $W/env.sh\" --seed 1 --threads 2 --generations 3 && has out 'not solved after 3 generation(s), 450 evaluations' && printf 'while read w a\\073 do case $w in reset) echo \"obs 0 1\"\\073\\073 act) echo \"step $a 1\"\\073\\073 esac\\073 done\\n' > \"$W/nobc.sh\" && expect 2 '${otc}' evolve \"$W/x.ini\" --task \"exec:sh $W/nobc.sh\" --seed 1 --threads 1 --generations 3 && has err 'gave no behaviour'"
      # Hostile options and files: refused with exit 2 and a message naming what is wrong.
      mpi_timeout_out_of_range_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --mpi-timeout 0 && has err '--mpi-timeout must be' && expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --mpi-timeout nan && has err \"bad value 'nan' for --mpi-timeout (expected a finite number\""
      seed_overflow_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 99999999999999999999999 && has err \"bad value '99999999999999999999999' for --seed\""
      threads_negative_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --threads -1 && has err 'expected an integer from 0 to 1024'"
      task_csv_without_path_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task csv: && has err 'csv:FILE'"
      generations_overflow_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --generations 99999999999 && has err \"bad value '99999999999' for --generations\""
      long_comment_and_cr_lines_change_nothing
      "expect 0 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 1 --threads 1 && cp \"$W/out\" \"$W/ref\" && cp '${examples}/xor.ini' \"$W/long.ini\" && printf '#%0280dconn_add_attempts = 0\\n' 0 >> \"$W/long.ini\" && expect 0 '${otc}' evolve \"$W/long.ini\" --task xor --seed 1 --threads 1 && cmp \"$W/out\" \"$W/ref\" && tr '\\n' '\\r' < '${examples}/xor.ini' > \"$W/cr.ini\" && expect 0 '${otc}' evolve \"$W/cr.ini\" --task xor --seed 1 --threads 1 && cmp \"$W/out\" \"$W/ref\""
      long_value_line_exits_2
      "cp '${examples}/xor.ini' \"$W/long.ini\" && printf 'activation_options = sigmoid%0280d\\n' 0 >> \"$W/long.ini\" && n=$(wc -l < \"$W/long.ini\") && expect 2 '${otc}' evolve \"$W/long.ini\" --task xor && has err \"long.ini:$n: line longer than\""
      pop_size_too_large_exits_2
      "sed 's/^pop_size .*/pop_size = 1000000/' '${examples}/xor.ini' > \"$W/big.ini\" && expect 2 '${otc}' evolve \"$W/big.ini\" --task xor && has err '[NEAT] pop_size: value' && has err 'out of range [2, 100000]'"
      # The sequence task ([Task] sequence): recurrent genomes trained through time.
      sequence_hybrid_solves_exits_0
      "expect 0 '${otc}' evolve '${examples}/delayed_xor_hybrid.ini' --task 'csv:${PROJECT_SOURCE_DIR}/examples/data/delayed_xor.csv' --seed 1 --threads 1 && has out 'csv: solved after 17 generation(s)'"
      sequence_column_missing_exits_2
      "sed 's/^sequence .*/sequence = episode/' '${examples}/delayed_xor_hybrid.ini' > \"$W/s.ini\" && expect 2 '${otc}' evolve \"$W/s.ini\" --task 'csv:${PROJECT_SOURCE_DIR}/examples/data/delayed_xor.csv' && has err 'delayed_xor.csv: no sequence column named \"episode\"'"
      sequence_feed_forward_exits_2
      "sed 's/^feed_forward .*/feed_forward = true/' '${examples}/delayed_xor_hybrid.ini' > \"$W/f.ini\" && expect 2 '${otc}' evolve \"$W/f.ini\" --task 'csv:${PROJECT_SOURCE_DIR}/examples/data/delayed_xor.csv' && has err 'f.ini: [DefaultGenome] feed_forward: the sequence task ([Task] sequence = seq) needs recurrent genomes'"
      recurrent_hybrid_without_sequence_exits_2
      "grep -v '^sequence ' '${examples}/delayed_xor_hybrid.ini' > \"$W/r.ini\" && expect 2 '${otc}' evolve \"$W/r.ini\" --task 'csv:${PROJECT_SOURCE_DIR}/examples/data/delayed_xor.csv' && has err 'r.ini: [Hybrid] train_steps: hybrid training of recurrent genomes' && has err 'set [Task] sequence'"
      resume_empty_species_exits_2
      "expect 1 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 5 --generations 3 --threads 1 --checkpoint-every 1 --checkpoint-prefix \"$W/ck-\" && sed 's/\"members\":\\[[0-9,]*\\]/\"members\":[]/' \"$W/ck-3.json\" > \"$W/bad.json\" && expect 2 '${otc}' evolve '${examples}/xor.ini' --task xor --resume \"$W/bad.json\" && has err 'bad.json: species 0: members'"
      resume_other_config_exits_2
      "expect 1 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 5 --generations 2 --threads 1 --checkpoint-every 2 --checkpoint-prefix \"$W/ck-\" && sed 's/^conn_add_prob .*/conn_add_prob = 0.2/' '${examples}/xor.ini' > \"$W/other.ini\" && expect 2 '${otc}' evolve \"$W/other.ini\" --task xor --resume \"$W/ck-2.json\" && has err \"ck-2.json: config: [DefaultGenome] conn_add_prob: the checkpoint was made with '0.05', this config has '0.2'\" && expect 1 '${otc}' evolve '${examples}/xor.ini' --task xor --generations 3 --threads 1 --resume \"$W/ck-2.json\"")
  list(LENGTH neat_cli_cases n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET neat_cli_cases ${i} name)
    list(GET neat_cli_cases ${j} body)
    add_test(NAME neat_cli_${name} COMMAND ${OTC_NEAT_CLI_BASH} -c "${prelude}${body}")
    set_tests_properties(neat_cli_${name} PROPERTIES TIMEOUT 60)
  endforeach()
endif()
