package eventlog

// ModelsState reads the version of the live read-model space and the last seq
// folded into it ("" and 0 when no model was ever folded). It needs no Folder,
// so a log opened without Options.Models (civnode doctor) can tell what the
// node's next start will do: nothing when version is the folder's and applied
// is the tip, fold the tail when applied is behind, rebuild when the version
// differs. The live space is chosen as openModels chooses it.
func (l *Log) ModelsState() (version string, applied uint64, err error) {
	live := spaceModelsA
	v, ok, err := dbGet(l.db, metaModelsKey)
	if err != nil {
		return "", 0, err
	}
	if ok && len(v) == 1 && (v[0] == spaceModelsA || v[0] == spaceModelsB) {
		live = v[0]
	}
	return l.spaceState(newModelSpace(l.db, live, l.modelCache))
}
