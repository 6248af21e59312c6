# Writes otc.1 from the built command's own help: `otc --help` gives the description and the
# subcommands, `otc CMD --help` each subcommand's synopsis and options, so the man page and
# --help cannot say different things. Run by frontend/man.cmake at build time:
#   cmake -DOTC=path/to/otc -DOUT=path/to/otc.1 -DVERSION=x.y.z -P man_page.cmake
cmake_policy(VERSION 3.20)

# Text as roff: backslashes escaped, hyphens as \- (so options copy and paste as typed), a
# leading dot or quote kept from being read as a request.
function(roff_escape text out)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "^([.'])" "\\\\&\\1" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# A subcommand this build leaves out (e.g. bench without LLVM) answers --help with an error:
# the page then says what it printed.
function(run_help out)
  execute_process(COMMAND ${OTC} ${ARGN} --help OUTPUT_VARIABLE text ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    if(NOT ARGN OR err STREQUAL "")
      message(FATAL_ERROR "${OTC} ${ARGN} --help failed (${rc}): ${err}")
    endif()
    set(text "${err}")
  endif()
  string(REPLACE ";" "\\;" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

run_help(top)
set(description "")
set(commands "")
set(page "")
set(section "")
foreach(line IN LISTS top)
  if(line MATCHES "^commands:")
    set(section commands)
  elseif(section STREQUAL "commands" AND line MATCHES "^  ([a-z0-9_]+) +(.*)$")
    list(APPEND commands ${CMAKE_MATCH_1})
    set(summary_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  elseif(line MATCHES "^usage: otc (.*)$")
    set(top_usage "${CMAKE_MATCH_1}")
  elseif(NOT section AND NOT line STREQUAL "")
    set(description "${line}")
  endif()
endforeach()
if(NOT commands)
  message(FATAL_ERROR "no commands in `${OTC} --help`")
endif()

string(TIMESTAMP date "%Y-%m-%d" UTC) # SOURCE_DATE_EPOCH, when set, for reproducible builds
roff_escape("${description}" d)
roff_escape("${top_usage}" u)
string(APPEND page ".\\\" Generated from `otc --help` and `otc COMMAND --help`; do not edit.\n"
  ".TH OTC 1 \"${date}\" \"otc ${VERSION}\" \"User Commands\"\n.nh\n.ad l\n"
  ".SH NAME\notc \\- ${d}\n.SH SYNOPSIS\n.B otc\n${u}\n"
  ".SH DESCRIPTION\n${d}\n.PP\nEach subcommand is described below; "
  "\\fBotc\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR prints the same text.\n"
  ".SH OPTIONS\n.TP\n.B \\-\\-help, \\-h, help\nshow the list of commands\n"
  ".TP\n.B \\-\\-version\nprint the version (otc ${VERSION})\n.SH COMMANDS\n")
foreach(cmd IN LISTS commands)
  roff_escape("${summary_${cmd}}" s)
  string(APPEND page ".TP\n.B ${cmd}\n${s}\n")
endforeach()
foreach(cmd IN LISTS commands)
  run_help(help ${cmd})
  roff_escape("${summary_${cmd}}" s)
  string(APPEND page ".SH \"OTC ${cmd}\" \n${s}.\n")
  foreach(line IN LISTS help)
    if(line MATCHES "^usage: (.*)$")
      roff_escape("${CMAKE_MATCH_1}" u)
      string(APPEND page ".PP\n.B ${u}\n.PP\n")
    elseif(line MATCHES "^  (-.*)$")
      string(LENGTH "${line}" n)
      if(n GREATER 30)
        string(SUBSTRING "${line}" 30 1 gap)
      else()
        set(gap " ")
      endif()
      if(gap STREQUAL " ")
        string(SUBSTRING "${line}" 2 28 left)
        string(STRIP "${left}" left)
        if(n GREATER 31)
          string(SUBSTRING "${line}" 31 -1 text)
        else()
          set(text "")
        endif()
      else() # an option column wider than --help's: the first word is the option
        string(REGEX MATCH "^  ([^ ]+) (.*)$" m "${line}")
        set(left "${CMAKE_MATCH_1}")
        set(text "${CMAKE_MATCH_2}")
      endif()
      # "--name,-n VALUE": the names in bold, the value in italics.
      string(REGEX MATCH "^([^ ]+)( (.*))?$" m "${left}")
      set(names "${CMAKE_MATCH_1}")
      set(value "${CMAKE_MATCH_3}")
      string(REPLACE "," ", " names "${names}")
      roff_escape("${names}" names)
      roff_escape("${value}" value)
      roff_escape("${text}" text)
      if(value)
        string(APPEND page ".TP\n.BI \"${names} \" \"${value}\"\n${text}\n")
      else()
        string(APPEND page ".TP\n.B ${names}\n${text}\n")
      endif()
    elseif(line MATCHES "^options:")
      string(APPEND page ".PP\nOptions:\n")
    elseif(NOT line STREQUAL "")
      roff_escape("${line}" t)
      string(APPEND page ".PP\n${t}\n")
    endif()
  endforeach()
endforeach()
string(APPEND page ".SH EXIT STATUS\n0 on success, 1 when a job ran but did not reach its goal, "
                   "2 for bad usage or bad input.\n")
# A short session from the source tree, one task per entry (the longer walk-throughs are the
# README's quick start and docs/commands.md; tests/man_page_test.sh checks each names a listed
# command).
set(examples
  "Evolve a XOR network with NEAT and save the champion"
  "otc evolve examples/neat/xor.ini --task xor --seed 3 --out xor.otm"
  "Show its neurons and connections, then draw it"
  "otc summary xor.otm"
  "" "otc viz xor.otm -o xor.svg --weights"
  "Compile it to standalone C (xor_c/xor.h and xor_c/xor.c)"
  "otc compile xor.otm --emit-c xor_c --name xor"
  "Train a classifier on a CSV file, then classify the rows"
  "otc train examples/models/iris_mlp.otm --data examples/data/iris.csv --target species --epochs 40 --out iris.otm"
  "" "otc run iris.otm --input examples/data/iris.csv --drop species --argmax"
  "Read a network exported by neat-python"
  "otc import net.json -o net.otm"
  "Time the interpreter, the JIT and the emitted C on a random 100-neuron graph"
  "otc bench --random 100 --batch 1")
string(APPEND page ".SH EXAMPLES\n")
set(caption "")
foreach(entry IN LISTS examples)
  if(NOT entry MATCHES "^otc ")
    set(caption "${entry}")
    continue()
  endif()
  roff_escape("${entry}" e)
  if(caption)
    roff_escape("${caption}" c)
    string(APPEND page ".PP\n${c}:\n")
  endif()
  string(APPEND page ".RS 4\n.nf\n\\fB${e}\\fR\n.fi\n.RE\n")
  set(caption "")
endforeach()
string(APPEND page ".SH SEE ALSO\nThe guides in the source tree's docs/ folder: commands.md (every option with "
                   "examples), neat.md, deployment.md, library.md, performance.md.\n")
file(WRITE "${OUT}.tmp" "${page}")
file(RENAME "${OUT}.tmp" "${OUT}")
