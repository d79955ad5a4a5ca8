# Install rules and an exported package: find_package(cairn) then link
# cairn::cairn. The internal static libraries are installed because
# cairn_core needs them at link time; their headers are not: a user includes
# only cairn/*.h.
include(CMakePackageConfigHelpers)
install(DIRECTORY core/include/cairn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS cairn cairn_core cairn_gc cairn_lsm cairn_vlog cairn_io
  EXPORT cairnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT cairnTargets NAMESPACE cairn::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cairn)
configure_package_config_file(cmake/cairnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/cairnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cairn)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cairnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cairnConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/cairnConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cairn)
