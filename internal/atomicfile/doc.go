// Package atomicfile writes files that a reader or a crash sees whole or not at
// all: the bytes go to a temporary file in the target's own directory (or a
// directory on the same file system), are synced, and only then get the
// target's name.
//
// Two ways to name the file, for two contracts:
//   - [Create] links the temporary file to the name, which fails when the name
//     exists: nothing is ever overwritten, and of two concurrent writers exactly
//     one wins. Secrets, evidence and keys use it.
//   - [Replace] renames over the name: a reader sees the old file or the new
//     one. Published tiles and checkpoints use it.
//
// [WriteTemp] is the step both share, the synced temporary file, for a caller
// that links or renames it itself. [SyncDir] makes a name durable: Create
// syncs the directory itself, while after Replace the caller does, once for
// all the files it put in that directory.
//
// It imports only the standard library, so any package of the module may use it.
package atomicfile
