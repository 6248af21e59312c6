# ONNX's protobuf schema compiled to C by protobuf-c at build time: the onnx.proto Debian's
# libonnx-dev ships, never a vendored copy. Sets OTC_ONNX_PROTO_SOURCE (the generated .c, to
# compile into whatever reads or writes ONNX), OTC_ONNX_PROTO_INCLUDE (the folder of
# onnx.pb-c.h) and the imported target PkgConfig::PROTOBUF_C (the runtime library).
# Included by the main build (runtime/) and by the fuzz project.
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(OTC_PROTOC_C NAMES protoc-c REQUIRED)
find_file(OTC_ONNX_PROTO_FILE onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH REQUIRED)
get_filename_component(otc_onnx_proto_dir ${OTC_ONNX_PROTO_FILE} DIRECTORY)
set(OTC_ONNX_PROTO_INCLUDE ${CMAKE_BINARY_DIR}/onnx_proto)
set(OTC_ONNX_PROTO_SOURCE ${OTC_ONNX_PROTO_INCLUDE}/onnx.pb-c.c)
add_custom_command(
  OUTPUT ${OTC_ONNX_PROTO_SOURCE} ${OTC_ONNX_PROTO_INCLUDE}/onnx.pb-c.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${OTC_ONNX_PROTO_INCLUDE}
  COMMAND ${OTC_PROTOC_C} --c_out=${OTC_ONNX_PROTO_INCLUDE} --proto_path=${otc_onnx_proto_dir}
          ${OTC_ONNX_PROTO_FILE}
  DEPENDS ${OTC_ONNX_PROTO_FILE}
  COMMENT "protoc-c: onnx.proto -> onnx.pb-c.c")
# Generated code is not ours to warn about (it also uses casts -Wextra dislikes).
set_source_files_properties(${OTC_ONNX_PROTO_SOURCE} PROPERTIES GENERATED ON COMPILE_OPTIONS -w)
