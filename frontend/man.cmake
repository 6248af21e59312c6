# otc.1: generated at build time from the built otc's --help texts (frontend/man_page.cmake).
set(OTC_MAN_PAGE ${PROJECT_BINARY_DIR}/man/otc.1)
add_custom_command(
  OUTPUT ${OTC_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -DOTC=$<TARGET_FILE:otc_cli> -DOUT=${OTC_MAN_PAGE}
          -DVERSION=${PROJECT_VERSION} -P ${CMAKE_CURRENT_SOURCE_DIR}/man_page.cmake
  DEPENDS otc_cli ${CMAKE_CURRENT_SOURCE_DIR}/man_page.cmake
  COMMENT "Generating otc.1 from otc --help"
  VERBATIM)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/man)
add_custom_target(otc_man ALL DEPENDS ${OTC_MAN_PAGE})
