/* LeakSanitizer suppressions for what Graphviz keeps, linked into every program that renders
 * through libgvc (the otc command and test_dot).
 *
 * Graphviz and the font libraries under it keep caches for the life of the process, which
 * LeakSanitizer would report in sanitizer builds: those (and only those) libraries' leaks are
 * not ours to fix. The hooks are ignored when LeakSanitizer is not linked in. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libgvc.so\nleak:libcgraph.so\nleak:libcdt.so\nleak:libgvplugin\n"
           "leak:libfontconfig.so\nleak:libglib-2.0.so\nleak:libgobject-2.0.so\nleak:libpango\n"
           "leak:libcairo.so\nleak:libfreetype.so\nleak:libharfbuzz.so\nleak:libexpat.so\n";
}
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) {
    return "print_suppressions=0";
}
