// Package coretest holds what tests of a core's wiring share: Full opens a
// core with every part present, and CarriesEveryPart checks that a mapping
// of a core onto a server's options leaves none of its parts out.
//
// The node maps its core onto http.Options once, in localnode.ServerOptions;
// http's own tests cannot import that (localnode imports http) and map it
// again. Both mappings are held complete by the one check here.
package coretest
