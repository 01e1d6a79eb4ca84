package main

import "embed"

// The long help of each command is prose, kept in help/<name>.txt beside the
// code that runs it, where it reads and diffs as the text a user sees.
//
//go:embed help/*.txt
var helpTexts embed.FS

// longHelp is the long help in help/<name>.txt, named for the command's path
// (transparency-check). A missing file is a mistake in the build, which every
// CLI test meets at once: the root command builds every command's help.
func longHelp(name string) string {
	b, err := helpTexts.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("civnode: no help text " + name + ": " + err.Error())
	}
	return string(b)
}
