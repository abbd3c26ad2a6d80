# Turns the preprocessed header (IN) into a C source (OUT) defining lmx_cdef_text, so the
# library carries the exact ffi.cdef text of the header it was built from.
file(READ ${IN} text HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${text}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from src/luamx.h by cmake/embed_cdef.cmake; do not edit */\n"
  "__attribute__((visibility(\"hidden\"))) const char lmx_cdef_text[] = {\n${bytes}0x00};\n")
