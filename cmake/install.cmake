# `cmake --install BUILD --prefix P`: the program in P/bin, libgprfwi (shared,
# SONAME libgprfwi.so.MAJOR.MINOR) in P/lib, its headers in P/include/gprfwi,
# a CMake package (find_package(gprfwi): the target gprfwi::gprfwi) and a
# pkg-config file, and in P/share/gprfwi the sample run files and the plot,
# SLURM and benchmark scripts (docs/install.md).
include(CMakePackageConfigHelpers)

install(TARGETS gprfwi EXPORT gprfwiTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS gprfwi_app RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lib/gprfwi DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")

set(GPRFWI_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gprfwi)
install(EXPORT gprfwiTargets NAMESPACE gprfwi:: DESTINATION ${GPRFWI_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gprfwiConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gprfwiConfig.cmake INSTALL_DESTINATION ${GPRFWI_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gprfwiConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gprfwiConfig.cmake ${PROJECT_BINARY_DIR}/gprfwiConfigVersion.cmake
  DESTINATION ${GPRFWI_CMAKE_DIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/gprfwi.pc.in ${PROJECT_BINARY_DIR}/gprfwi.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gprfwi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(GPRFWI_SHARE ${CMAKE_INSTALL_DATADIR}/gprfwi)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${GPRFWI_SHARE}/configs)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/benchmark-inversion.sh DESTINATION ${GPRFWI_SHARE}/scripts)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/scripts/plot ${PROJECT_SOURCE_DIR}/scripts/slurm
  DESTINATION ${GPRFWI_SHARE}/scripts USE_SOURCE_PERMISSIONS)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
