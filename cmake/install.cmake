# cmake --install: libotc and libotc_compiler (shared and static), the LLVM plugin, the public
# headers, the otc command and its man page, otc.pc and otc-compiler.pc, and the CMake
# package (find_package(otc) -> otc::otc, otc::otc_static, otc::compiler,
# otc::compiler_static) with its version file. Paths from GNUInstallDirs.
include(CMakePackageConfigHelpers)
set(OTC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/otc)

set(OTC_INSTALL_TARGETS otc otc_shared otc_compiler otc_compiler_shared)
set_target_properties(otc_shared PROPERTIES EXPORT_NAME otc)
set_target_properties(otc PROPERTIES EXPORT_NAME otc_static)
set_target_properties(otc_compiler_shared PROPERTIES EXPORT_NAME compiler)
set_target_properties(otc_compiler PROPERTIES EXPORT_NAME compiler_static)
install(TARGETS ${OTC_INSTALL_TARGETS} EXPORT otcTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The plugin, beside libotc_compiler.so where its loader looks.
if(TARGET otc_llvm)
  install(TARGETS otc_llvm LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# libotc_mpi beside libotc.so, where `otc evolve` under mpirun looks for it.
if(TARGET otc_mpi)
  install(TARGETS otc_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/mpi/include/otc/neat_mpi.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/otc)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/otc ${PROJECT_SOURCE_DIR}/compiler/include/otc
                  ${PROJECT_BINARY_DIR}/include/otc
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
if(TARGET otc_cli)
  install(TARGETS otc_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${PROJECT_BINARY_DIR}/man/otc.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

install(EXPORT otcTargets NAMESPACE otc:: DESTINATION ${OTC_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/otcConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/otcConfig.cmake
                              INSTALL_DESTINATION ${OTC_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/otcConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/otcConfig.cmake ${PROJECT_BINARY_DIR}/otcConfigVersion.cmake
        DESTINATION ${OTC_CMAKE_DIR})

# pkg-config files: paths relative to ${prefix} when they are inside it (relocatable).
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(OTC_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(OTC_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
# prefix: the one given at install time (cmake --install --prefix DIR), filled in then.
set(OTC_PC_PREFIX "@OTC_INSTALL_PREFIX@")
set(OTC_PC_LLVM "")
if(OTC_LLVM_LIB)
  get_filename_component(llvm_dir ${OTC_LLVM_LIB} DIRECTORY)
  get_filename_component(llvm_name ${OTC_LLVM_LIB} NAME_WE)
  string(REGEX REPLACE "^lib" "" llvm_name ${llvm_name})
  set(OTC_PC_LLVM "-L${llvm_dir} -l${llvm_name}")
endif()
set(CMAKE_DL_LIBS_FLAG "")
foreach(l ${CMAKE_DL_LIBS})
  string(APPEND CMAKE_DL_LIBS_FLAG "-l${l}")
endforeach()
foreach(pc otc otc-compiler)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc.in
                 @ONLY)
  install(CODE "
    file(READ \"${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc.in\" pc)
    string(REPLACE \"@OTC_INSTALL_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" pc \"\${pc}\")
    file(WRITE \"${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc\" \"\${pc}\")")
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
