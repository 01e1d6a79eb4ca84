// Package backup makes and restores copies of a node's data directory.
//
// A backup is a directory that holds:
//   - db/: a consistent copy of the node's Pebble store, taken with Pebble's
//     own checkpoint at a tip the log reports exactly (eventlog.Log.Backup),
//     never a copy of live files;
//   - the data directory's own files (the node key, the control token, the
//     registry credential, the payment accounts' keys, the witness state),
//     each with mode 0600;
//   - manifest.json, written last: the node, the tip seq and id, the chain's
//     root, the Merkle tree's size and root and the node's signed checkpoint
//     of that tree. A directory without a manifest is not a backup.
//
// The copy is made in two steps, so that commits wait only for the first: a
// snapshot inside the data directory (hard links, instant; [TakeSnapshot], or
// [Take], which also records it in the audit log), then a copy of its files
// to the backup directory, on any file system, with a [Progress] callback
// ([Write]). The running node takes the snapshot when asked through its admin
// API; on a stopped node the CLI takes it. The [Snapshot] is removed once
// copied ([Snapshot.Remove]).
//
// A mirror's data directory is backed up the same way: origin.vkey takes
// the node key's place, and the manifest names the origin and the origin's
// newest checkpoint the mirror holds, which may be of fewer events than its
// tip.
//
// [Restore] copies a backup into a new, empty data directory ([NewTarget]
// makes it and undoes a restore that failed), once [CheckManifest] has found
// the checkpoint of its [Manifest] ([ReadManifest]) signed by the manifest's
// node and of the manifest's tree_size and tree_root. The caller then verifies
// the chain, the tree (which [Verify] holds to the manifest's) and the models
// before a node may start on it.
package backup
