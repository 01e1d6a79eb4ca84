package eventlog

import "encoding/binary"

// Key spaces; see doc.go.
const (
	spaceMeta  byte = 0x00
	spaceEvent byte = 0x01
	// spaceRetiredID held schema 1's id → seq index, which nothing read and
	// which was the one random key of every append; Open deletes it when it
	// moves a store to schema 2 (schema.go).
	spaceRetiredID byte = 0x02
	spaceType      byte = 0x03
	spaceTime      byte = 0x04
	spaceAudit     byte = 0x05
	spaceRecord    byte = 0x06
)

var metaSchemaKey = []byte{spaceMeta, 's', 'c', 'h', 'e', 'm', 'a'}

const schemaVersion = "2"

func u64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func appendU64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

func eventKey(seq uint64) []byte { return appendU64([]byte{spaceEvent}, seq) }

func typeKey(typ string, seq uint64) []byte {
	k := make([]byte, 0, len(typ)+10)
	k = append(append(append(k, spaceType), typ...), 0)
	return appendU64(k, seq)
}

// typeKeyEnd is the first key after every index entry of typ.
func typeKeyEnd(typ string) []byte {
	return append(append([]byte{spaceType}, typ...), 1)
}

func timeKey(micros int64) []byte { return appendU64([]byte{spaceTime}, uint64(micros)) }

func auditKey(micros int64) []byte { return appendU64([]byte{spaceAudit}, uint64(micros)) }
