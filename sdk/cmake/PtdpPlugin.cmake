# ptdp_set_plugin_name(<target> <name>)
#
# The code of <target> belongs to plugin <name>: PTDP_PLUGIN_NAME, which ptdp/checked_call.hpp's
# errors start with. ptdp_add_plugin() sets it; a library of a plugin's code built on its own
# (for tests to link) sets it with this.
function(ptdp_set_plugin_name target name)
  target_compile_definitions(${target} PRIVATE PTDP_PLUGIN_NAME="${name}")
endfunction()

# ptdp_add_plugin(<name> [OUTPUT_DIRECTORY <dir>] [NO_INSTALL] <sources>...)
#
# Builds libptdp-<name>.so against the SDK: hidden visibility (only the entry symbol is
# exported), no undefined symbols, PTDP_PLUGIN_NAME "<name>". It goes to OUTPUT_DIRECTORY, else PTDP_PLUGIN_OUTPUT_DIR when
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
  ptdp_set_plugin_name(${target} ${name})

  get_property(in_tree GLOBAL PROPERTY PTDP_BUILDING_PTDP)
  if(in_tree AND NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${PTDP_PLUGIN_INSTALL_DIR} COMPONENT plugins)
  endif()
endfunction()
