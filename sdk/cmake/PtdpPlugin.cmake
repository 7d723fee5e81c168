# ptdp_add_plugin(NAME SOURCES...) builds libptdp-NAME.so against the SDK: hidden visibility
# (only the entry symbol is exported), no undefined symbols, placed where ptdp-host looks.
function(ptdp_add_plugin name)
  add_library(ptdp-plugin-${name} MODULE ${ARGN})
  set_target_properties(ptdp-plugin-${name} PROPERTIES
    OUTPUT_NAME ptdp-${name}
    PREFIX lib
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(DEFINED PTDP_PLUGIN_OUTPUT_DIR)
    set_target_properties(ptdp-plugin-${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PTDP_PLUGIN_OUTPUT_DIR})
  endif()
  target_link_options(ptdp-plugin-${name} PRIVATE -Wl,--no-undefined)
  target_link_libraries(ptdp-plugin-${name} PRIVATE ptdp::sdk)
endfunction()
