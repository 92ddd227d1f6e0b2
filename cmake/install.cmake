# `cmake --install build --prefix P`: the C++ package (docs/cpp.md). Into P go the static
# libraries (one per layer, and ug_serve), their headers, the `ug` program, the CMake package
# that find_package(unigrad CONFIG) reads (lib/cmake/unigrad) and the pkg-config files
# unigrad.pc and unigrad-serve.pc. The Python module and the tests are not installed (pip
# installs the module: python/CMakeLists.txt).
include(CMakePackageConfigHelpers)
set(UG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/unigrad)
# The layers, bottom up as src/CMakeLists.txt declares them.
get_target_property(UG_LAYERS unigrad INTERFACE_LINK_LIBRARIES)

# Two export sets: the server's (unigrad::serve) is read only when asked for, so a program that
# does not serve needs neither cpp-httplib nor its OpenSSL and brotli.
install(TARGETS ${UG_LAYERS} ug_tensorboard_proto unigrad EXPORT unigradTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ug_serve EXPORT unigradServeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT unigradTargets NAMESPACE unigrad:: DESTINATION ${UG_CMAKE_DIR} COMPONENT Development)
install(EXPORT unigradServeTargets NAMESPACE unigrad:: DESTINATION ${UG_CMAKE_DIR} COMPONENT Development)

# The headers as the sources include them ("ug/..."). Left out: the four that include a
# dependency's headers, which the implementation alone uses (the HTTP server's httplib, the
# ONNX exporter's message classes); no installed header includes them.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ug DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT Development
        FILES_MATCHING PATTERN "*.h"
        PATTERN "serve/handlers.h" EXCLUDE PATTERN "serve/http_server.h" EXCLUDE
        PATTERN "onnx/graph_builder.h" EXCLUDE PATTERN "onnx/export_table.h" EXCLUDE
        PATTERN "proto" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/src/generated/ug/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ug COMPONENT Development)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/unigradConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/unigradConfig.cmake INSTALL_DESTINATION ${UG_CMAKE_DIR})
# Before 1.0 a minor version may break the API (semantic versioning): 0.1.x accepts 0.1 only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/unigradConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/unigradConfig.cmake ${PROJECT_BINARY_DIR}/unigradConfigVersion.cmake
        DESTINATION ${UG_CMAKE_DIR} COMPONENT Development)

# pkg-config: the archives in link order, each before those it calls. The layers were declared
# bottom up (src/CMakeLists.txt), so reversed they are top down; TensorBoard's messages follow
# ug_log, their one user.
set(UG_PC_ARCHIVES ${UG_LAYERS})
list(REVERSE UG_PC_ARCHIVES)
list(FIND UG_PC_ARCHIVES ug_log log_index)
math(EXPR log_index "${log_index} + 1")
list(INSERT UG_PC_ARCHIVES ${log_index} ug_tensorboard_proto)
list(TRANSFORM UG_PC_ARCHIVES PREPEND -l)
list(JOIN UG_PC_ARCHIVES " " UG_PC_ARCHIVES)
# The prefix relative to the .pc file, so that the package works wherever it was installed.
file(RELATIVE_PATH UG_PC_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" UG_PC_PREFIX ${UG_PC_PREFIX})
foreach(pc unigrad unigrad-serve)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT Development)
endforeach()

if(UG_BUILD_CLI)
  install(TARGETS ug RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
endif()
