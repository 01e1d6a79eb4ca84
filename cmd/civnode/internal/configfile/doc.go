// Package configfile reads ([Read]) the YAML file of civnode serve --config: one
// mapping of flag names to values, each value turned into the text the flag
// would take on the command line (a list joined with commas, null as ""), so
// that the command sets it with pflag's own parser. Which source wins (a
// flag, then a CIVNODE_* variable, then the file, then the default) is the
// command's; this package only reads the file, and refuses a key that names
// no flag, a key set twice and a value that is neither a scalar nor a list of
// scalars without commas. Errors name the file and, where there is one, the
// line.
package configfile
