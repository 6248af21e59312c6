# Tests written once against the executor interface (BACKEND_TEST, tests/backend_support.h)
# run on the interpreter, the emitted C (built and loaded with dlopen by
# tests/emitc_executor.c) and, when the LLVM backend is built, the JIT.
foreach(t test_executor test_gradcheck test_bptt test_neat_python test_conv_compiled
          test_onnx_torch
          test_ieee_specials)
  if(TARGET ${t})
    target_sources(${t} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/backend_support.c
                                ${CMAKE_CURRENT_LIST_DIR}/emitc_executor.c
                                ${CMAKE_CURRENT_LIST_DIR}/emitc_support.c)
    target_link_libraries(${t} PRIVATE ${CMAKE_DL_LIBS})
    if(jit IN_LIST OTC_TEST_BACKENDS)
      target_compile_definitions(${t} PRIVATE OTC_TEST_JIT=1)
    endif()
  endif()
endforeach()
