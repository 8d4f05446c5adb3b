# `cmake --install build [--prefix P]` (and DESTDIR, and `cpack -G DEB`): GNUInstallDirs paths.
#
#   include/gptoss.h, gptoss.hpp, gptoss/{backend,version}.h     component development
#   lib/libgptoss.so.<version>, libgptoss.so.N (N = the C ABI)   component runtime
#   lib/libgptoss.so (link-time name)                            component development
#   lib/gptoss/backends/libgptoss-backend-*.so                   component runtime
#   lib/cmake/gptoss/gptoss{Config,ConfigVersion,Targets*}.cmake component development
#   lib/pkgconfig/gptoss.pc                                      component development
#   bin/<every program of server/, examples/, tools/>                component programs
#   share/gptoss/tokenizer.json (the CLI's default model needs it) component programs
#   share/doc/libgptoss/ (README, LICENSE, docs/)                component docs
#
# Plugins and programs are found by walking the targets of their directories, so a new
# backend (backends/<name>, target gptoss-backend-<name>) or program (server/, examples/) is
# installed without touching this file.
include(CMakePackageConfigHelpers)

set(GPTOSS_BACKEND_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/gptoss/backends)
set(GPTOSS_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gptoss)

# Every build-system target defined in `dir` and below it.
function(gptoss_targets_under dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    gptoss_targets_under(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The library and its headers.
install(TARGETS gptoss gptoss_headers EXPORT gptossTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)
install(FILES include/gptoss.h include/gptoss.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
install(FILES include/gptoss/backend.h include/gptoss/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gptoss COMPONENT development)

# Backend plugins, where the library looks for them (libgptoss/backend/registry.cpp).
# gptoss-runtime builds what the runtime component installs (the Python package needs no more).
add_custom_target(gptoss-runtime)
add_dependencies(gptoss-runtime gptoss)
gptoss_targets_under(${PROJECT_SOURCE_DIR}/backends backend_targets)
foreach(t IN LISTS backend_targets)
  get_target_property(type ${t} TYPE)
  if(t MATCHES "^gptoss-backend-" AND type STREQUAL "MODULE_LIBRARY")
    install(TARGETS ${t} LIBRARY DESTINATION ${GPTOSS_BACKEND_INSTALL_DIR} COMPONENT runtime)
    add_dependencies(gptoss-runtime ${t})
  endif()
endforeach()

# Programs: the CLI, the server, the benchmarks and the tools. They find libgptoss through a
# relative RPATH, so an installed tree can be moved.
set(program_dirs ${PROJECT_SOURCE_DIR}/tools)
if(GPTOSS_BUILD_EXAMPLES)
  list(APPEND program_dirs ${PROJECT_SOURCE_DIR}/examples)
endif()
if(GPTOSS_BUILD_SERVER)
  list(APPEND program_dirs ${PROJECT_SOURCE_DIR}/server)
endif()
file(RELATIVE_PATH lib_from_bin ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
foreach(dir IN LISTS program_dirs)
  gptoss_targets_under(${dir} program_targets)
  foreach(t IN LISTS program_targets)
    get_target_property(type ${t} TYPE)
    # (Test programs that live beside a program, like gptoss-cli-completion-test, stay in the
    # build tree.)
    if(type STREQUAL "EXECUTABLE" AND NOT t MATCHES "-tests?$")
      set_target_properties(${t} PROPERTIES INSTALL_RPATH "$ORIGIN/${lib_from_bin}")
      install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT programs)
    endif()
  endforeach()
endforeach()
if(EXISTS ${GPTOSS_TOKENIZER_JSON})
  install(FILES ${GPTOSS_TOKENIZER_JSON} DESTINATION ${CMAKE_INSTALL_DATADIR}/gptoss
          RENAME tokenizer.json COMPONENT programs)
endif()

# find_package(gptoss 0.2 REQUIRED) -> gptoss::gptoss (the library) and gptoss::headers (the
# headers alone, for plugins, which must not link libgptoss).
install(EXPORT gptossTargets NAMESPACE gptoss:: DESTINATION ${GPTOSS_CMAKE_INSTALL_DIR}
        COMPONENT development)
configure_package_config_file(cmake/gptossConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gptossConfig.cmake INSTALL_DESTINATION ${GPTOSS_CMAKE_INSTALL_DIR}
  PATH_VARS GPTOSS_BACKEND_INSTALL_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gptossConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gptossConfig.cmake ${PROJECT_BINARY_DIR}/gptossConfigVersion.cmake
        DESTINATION ${GPTOSS_CMAKE_INSTALL_DIR} COMPONENT development)

# pkg-config, relocatable: paths relative to the .pc file's own folder.
file(RELATIVE_PATH GPTOSS_PC_PREFIX_FROM_PCDIR
     ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" GPTOSS_PC_PREFIX_FROM_PCDIR "${GPTOSS_PC_PREFIX_FROM_PCDIR}")
configure_file(cmake/gptoss.pc.in ${PROJECT_BINARY_DIR}/gptoss.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gptoss.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)

install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT docs)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT docs
        FILES_MATCHING PATTERN "*.md")

# cpack -G DEB: one package with every component.
set(CPACK_PACKAGE_NAME libgptoss)
set(CPACK_PACKAGE_VENDOR libgptoss)
set(CPACK_PACKAGE_CONTACT "libgptoss maintainers <libgptoss@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Inference for OpenAI's gpt-oss models behind a stable C API, with its CPU backend and tools")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEB_COMPONENT_INSTALL OFF)
include(CPack)
