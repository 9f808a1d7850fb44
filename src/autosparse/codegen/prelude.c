/* The C that kernels define before themselves, one section per helper; printer.py includes a section
   where a kernel asks for it (c_ast.Prelude), its ${placeholders} filled in. */
