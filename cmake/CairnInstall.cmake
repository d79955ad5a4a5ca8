# Install rules, an exported CMake package (find_package(cairn), then link
# cairn::cairn) and a pkg-config file (pkg-config --cflags --libs cairn).
# Static builds install the folder libraries, which cairn::cairn links;
# shared builds install libcairn.so alone. Internal headers are never
# installed: a user includes only cairn/*.h.
include(CMakePackageConfigHelpers)
install(DIRECTORY core/include/cairn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(BUILD_SHARED_LIBS)
  set(cairn_installed_libs cairn)
else()
  set(cairn_installed_libs cairn cairn_core cairn_gc cairn_lsm cairn_vlog cairn_io)
endif()
install(TARGETS ${cairn_installed_libs}
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

# cairn.pc. The abseil modules the public headers use are pinned to the
# release cairn was built with ("= version"), so pkg-config refuses another.
# A static cairn also needs, at the application's link, everything the
# folder libraries use; a shared one hides that behind libcairn.so.
set(cairn_pc_public "absl_status = ${CAIRN_ABSL_VERSION}, absl_statusor = ${CAIRN_ABSL_VERSION}")
set(cairn_pc_deps "")
foreach(dep strings str_format synchronization span flat_hash_map flat_hash_set btree
    inlined_vector time cleanup log_severity random_random)
  string(APPEND cairn_pc_deps ", absl_${dep} = ${CAIRN_ABSL_VERSION}")
endforeach()
string(APPEND cairn_pc_deps ", liburing, libzstd, libxxhash")
if(BUILD_SHARED_LIBS)
  set(CAIRN_PC_REQUIRES "${cairn_pc_public}")
  string(SUBSTRING "${cairn_pc_deps}" 2 -1 CAIRN_PC_REQUIRES_PRIVATE)
  set(CAIRN_PC_LIBS "-lcairn")
  set(CAIRN_PC_LIBS_PRIVATE "")
else()
  set(CAIRN_PC_REQUIRES "${cairn_pc_public}${cairn_pc_deps}")
  set(CAIRN_PC_REQUIRES_PRIVATE "")
  # In link order: each library before the ones it uses.
  # The C++ runtime last: a C program (cairn/c.h) linked with cc against
  # the static libraries needs it named; a C++ one gets it anyway.
  set(CAIRN_PC_LIBS
    "-lcairn_core -lcairn_gc -lcairn_lsm -lcairn_vlog -lcairn_io -pthread -lstdc++ -lm")
endif()
# cairn.pc finds its prefix from its own directory, so an install with
# --prefix (or a copied tree) still works.
file(RELATIVE_PATH CAIRN_PC_PREFIX_FROM_PCDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" CAIRN_PC_PREFIX_FROM_PCDIR "${CAIRN_PC_PREFIX_FROM_PCDIR}")
configure_file(cmake/cairn.pc.in ${CMAKE_CURRENT_BINARY_DIR}/cairn.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cairn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
