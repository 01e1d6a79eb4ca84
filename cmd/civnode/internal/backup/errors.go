package backup

import "errors"

// ErrManifest is a backup that disagrees with its own manifest: a tree_root,
// tree_size or checkpoint that the chain, or the key of the manifest's node,
// does not bear out. Restore refuses it.
var ErrManifest = errors.New("the backup disagrees with its manifest")
