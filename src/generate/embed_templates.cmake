# Writes OUT: a C++ file holding the templates/*.yaml `caphv generate` renders
# (FILES, comma-separated names relative to DIR) as raw strings (see generate/templates.h).
set(body "// Generated from templates/ by src/generate/embed_templates.cmake. Do not edit.\n")
string(APPEND body "#include \"generate/templates.h\"\n\nnamespace caphv::generate {\n\n")
string(APPEND body "std::string_view EmbeddedTemplate(std::string_view name) {\n")
string(REPLACE "," ";" files "${FILES}")
foreach(f ${files})
  file(READ ${DIR}/${f} content)
  string(APPEND body "  if (name == \"${f}\") return R\"caphv_yaml(${content})caphv_yaml\";\n")
endforeach()
string(APPEND body "  return {};\n}\n\n}  // namespace caphv::generate\n")
file(WRITE ${OUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
