# ptdp_add_plugin(<name> [OUTPUT_DIRECTORY <dir>] [NO_INSTALL] <sources>...)
#
# Builds libptdp-<name>.so against the SDK: hidden visibility (only the entry symbol is
# exported), no undefined symbols. It goes to OUTPUT_DIRECTORY, else PTDP_PLUGIN_OUTPUT_DIR when
# set (the ptdp build's lib/ptdp, where ptdp-host looks), else the current binary dir.
# Inside the ptdp project the plugin is also installed to PTDP_PLUGIN_INSTALL_DIR, unless
# NO_INSTALL (test plugins); out of tree, installing is left to the project.
function(ptdp_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "" ${ARGN})
  set(target ptdp-plugin-${name})
  add_library(${target} MODULE ${ARG_UNPARSED_ARGUMENTS})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ptdp-${name}
    PREFIX lib
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED PTDP_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PTDP_PLUGIN_OUTPUT_DIR})
  endif()
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  target_link_libraries(${target} PRIVATE ptdp::sdk)

  get_property(in_tree GLOBAL PROPERTY PTDP_BUILDING_PTDP)
  if(in_tree AND NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${PTDP_PLUGIN_INSTALL_DIR} COMPONENT plugins)
  endif()
endfunction()
