# The runtime's source folders (runtime/src/<folder>), each on the private include path of
# whatever compiles the runtime's sources: the library (runtime/CMakeLists.txt) and the fuzz
# project (tests/fuzz/CMakeLists.txt).
set(OTC_RUNTIME_FOLDERS core interp layers train data io onnx neat neat/tasks)
set(OTC_RUNTIME_PRIVATE_INCLUDES)
foreach(folder ${OTC_RUNTIME_FOLDERS})
  list(APPEND OTC_RUNTIME_PRIVATE_INCLUDES ${CMAKE_CURRENT_LIST_DIR}/src/${folder})
endforeach()
