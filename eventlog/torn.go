package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"
)

// Torn tails. Each group of appends is one Pebble batch, which Pebble writes
// to its write-ahead log as one record, cut into chunks that never cross a
// 32 KiB block; every chunk carries a CRC-32C and the log's number. Append
// returns only after the fsync that follows the record, so a process that
// dies while it writes one (SIGKILL, a power cut) leaves the newest log
// ending inside a record that nobody was told is durable: a torn tail.
//
// Pebble's recovery drops a record it cannot read to its end at the tail of
// the newest log, and says nothing. In the chunk format this store writes
// (no synced offsets), it does the same for a record damaged in the middle of
// that log, and drops every record after it, acknowledged ones included. So
// Open reads the newest log before Pebble does, and tells the two apart by
// what follows the last whole record:
//
//   - the end of the file, or a prefix of one record of this log (a chunk cut
//     short, or whole chunks without the last one), or such a prefix followed
//     by bytes of no chunk of this log (a recycled file's older contents): a
//     torn tail. Open goes on, Pebble drops the partial record, and
//     Log.TornTail reports it with the seq recovered;
//   - a chunk of this log that fails its checksum or framing (or a block's
//     padding that is not zeros), with a whole, valid chunk of this log
//     somewhere after it: the log was written past the damage, so the damage
//     came later. Open refuses with ErrCorrupt;
//   - nothing of this log (zeros, a recycled file's older bytes, the trailer
//     of a log that was closed): a clean end, nothing to report.
//
// Damage in the last record of the log, with nothing after it, cannot be told
// from a torn write and is reported as a torn tail: that record was not
// acknowledged either way, unless its fsync succeeded and the disk lost it
// later.

// Wire format of the write-ahead log (pebble/v2/record).
const (
	walBlockSize     = 32 << 10
	walHeaderSize    = 11 // CRC u32, length u16, kind u8, log number u32 (little-endian)
	walSyncHeaderLen = 19 // the same with the synced offset u64
	walKindEOF       = 5  // the kind of the trailer a closed log ends with
)

var walCRCTable = crc32.MakeTable(crc32.Castagnoli)

// TornTail is what Open found at the end of the newest write-ahead log: part
// of a record, the group of appends that the last run was writing when it
// stopped. Its fsync never completed, so none of its events were
// acknowledged; recovery dropped it.
type TornTail struct {
	// File is the write-ahead log, Offset where its last whole record ends,
	// and Bytes how many bytes after Offset recovery dropped.
	File   string
	Offset int64
	Bytes  int64
	// Seq is the tip of the recovered chain.
	Seq uint64
}

func (t *TornTail) Error() string {
	return fmt.Sprintf("torn tail: the newest write of the last run was cut short and never acknowledged; recovered to seq %d (dropped %d bytes after offset %d of %s)",
		t.Seq, t.Bytes, t.Offset, t.File)
}

func (t *TornTail) Unwrap() error { return ErrTornTail }

// TornTail is the torn tail Open found and recovered from, nil when the
// newest write-ahead log ended cleanly. Only the first Open after the tear
// finds it: Pebble then writes a new log.
func (l *Log) TornTail() *TornTail { return l.torn }

// checkWALTail reads the newest write-ahead log in dir to its last whole
// record, and returns the torn tail after it, if any, or ErrCorrupt.
func checkWALTail(fs vfs.FS, dir string) (*TornTail, error) {
	logs, err := wal.Scan(wal.Dir{FS: fs, Dirname: dir})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // a new store
	}
	if err != nil {
		return nil, fmt.Errorf("list the write-ahead logs: %w", err)
	}
	if len(logs) == 0 {
		return nil, nil
	}
	newest := logs[len(logs)-1]
	r := newest.OpenForRead()
	defer r.Close()
	for {
		_, off, err := r.NextRecord()
		switch {
		case err == nil:
			continue
		case errors.Is(err, record.ErrUnexpectedEOF):
			return readTail(fs, off.PhysicalFile, off.Physical, uint32(newest.Num))
		default:
			// io.EOF is a clean end. Corruption that a later chunk proves, and
			// an I/O error, are Pebble's to report when it replays the log.
			return nil, nil
		}
	}
}

// readTail judges the bytes of the log at path from offset from, where its
// last whole record ends, to its end.
func readTail(fs vfs.FS, path string, from int64, logNum uint32) (*TornTail, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the write-ahead log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read the write-ahead log: %w", err)
	}
	if fi.Size() <= from {
		return nil, nil
	}
	tail := make([]byte, fi.Size()-from)
	if _, err := f.ReadAt(tail, from); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the write-ahead log %s: %w", path, err)
	}
	switch v, at := judgeTail(tail, from, logNum); v {
	case tailTorn:
		return &TornTail{File: path, Offset: from, Bytes: int64(len(tail))}, nil
	case tailDamaged:
		return nil, chainErr(ErrCorrupt, 0, "cannot read %s: damaged at offset %d, with records written after it (damage, not a torn write)", path, at)
	default:
		return nil, nil
	}
}

type tailVerdict int

const (
	tailClean tailVerdict = iota
	tailTorn
	tailDamaged
)

// judgeTail walks the chunks of tail, the bytes of log logNum from offset
// from on (the end of its last whole record), as the rules at the top of this
// file say. For damage it also returns the offset of the bad chunk.
func judgeTail(tail []byte, from int64, logNum uint32) (tailVerdict, int64) {
	own := false // tail begins with chunks of this log
	i := 0
	for i < len(tail) {
		if left := walBlockSize - int((from+int64(i))%walBlockSize); left < walHeaderSize {
			// A block's end too short for a header is zeros.
			if !allZero(tail[i:min(i+left, len(tail))]) {
				break
			}
			i += left
			continue
		}
		c, ok := chunkAt(tail, i)
		if !ok && len(tail)-i < walHeaderSize {
			// The file ends inside a header: the trailer of a closed log, or
			// a header being written.
			if isTrailerPrefix(tail[i:], logNum) || allZero(tail[i:]) {
				return verdict(own), 0
			}
			return tailTorn, 0
		}
		if !ok || c.logNum != logNum || !c.inBlock(from+int64(i)) {
			break
		}
		if i+c.header+c.length > len(tail) {
			return tailTorn, 0 // the file ends inside this chunk
		}
		if !c.valid(tail[i:]) {
			break
		}
		if c.ends() {
			// A whole record follows the point where the reader stopped, so
			// something there that the walk passed over (padding that is
			// not zeros) is damage.
			return tailDamaged, from
		}
		own = true
		i += c.header + c.length
	}
	if i >= len(tail) {
		return verdict(own), 0 // whole chunks, but not the one that ends a record
	}
	if laterChunk(tail, from, i, logNum) {
		return tailDamaged, from + int64(i)
	}
	if c, ok := chunkAt(tail, i); own || ok && c.logNum == logNum {
		return tailTorn, 0
	}
	return tailClean, 0
}

func verdict(torn bool) tailVerdict {
	if torn {
		return tailTorn
	}
	return tailClean
}

// laterChunk reports whether a whole, valid chunk of log logNum follows the
// bad chunk at tail[d:]: after it in its block when its header still frames
// it, or in any later block, where chunks start at the block's start.
func laterChunk(tail []byte, from int64, d int, logNum uint32) bool {
	if c, ok := chunkAt(tail, d); ok && c.logNum == logNum && c.inBlock(from+int64(d)) {
		if validChunkIn(tail, from, d+c.header+c.length, logNum) {
			return true
		}
	}
	next := int(walBlockSize - (from+int64(d))%walBlockSize)
	for b := d + next; b < len(tail); b += walBlockSize {
		if validChunkIn(tail, from, b, logNum) {
			return true
		}
	}
	return false
}

// validChunkIn walks the chunks of one block from tail[i:] and reports
// whether one of them is a whole, valid chunk of log logNum. It stops where
// the framing breaks.
func validChunkIn(tail []byte, from int64, i int, logNum uint32) bool {
	for i < len(tail) {
		if walBlockSize-int((from+int64(i))%walBlockSize) < walHeaderSize {
			return false
		}
		c, ok := chunkAt(tail, i)
		if !ok || c.logNum != logNum || !c.inBlock(from+int64(i)) || i+c.header+c.length > len(tail) {
			return false
		}
		if c.valid(tail[i:]) {
			return true
		}
		i += c.header + c.length
	}
	return false
}

// walChunk is a chunk header of the write-ahead log.
type walChunk struct {
	header, length int
	kind           byte
	logNum         uint32
}

// chunkAt parses the chunk header at b[i:]; ok is false when fewer bytes than
// a header remain or the kind is not one of a log's chunks.
func chunkAt(b []byte, i int) (walChunk, bool) {
	if len(b)-i < walHeaderSize {
		return walChunk{}, false
	}
	var c walChunk
	switch kind := b[i+6]; {
	case kind >= 5 && kind <= 8:
		c.header = walHeaderSize
	case kind >= 9 && kind <= 12:
		c.header = walSyncHeaderLen
	default:
		return walChunk{}, false
	}
	c.kind = b[i+6]
	c.length = int(binary.LittleEndian.Uint16(b[i+4:]))
	c.logNum = binary.LittleEndian.Uint32(b[i+7:])
	return c, true
}

// ends reports whether the chunk is the last (or only) one of its record.
func (c walChunk) ends() bool { return c.kind == 5 || c.kind == 8 || c.kind == 9 || c.kind == 12 }

// inBlock reports whether the chunk, starting at file offset at, ends inside
// its block, as every chunk a writer emits does.
func (c walChunk) inBlock(at int64) bool {
	return int(at%walBlockSize)+c.header+c.length <= walBlockSize
}

// valid reports whether b, which starts with the chunk, holds all of it and
// it passes its checksum: Pebble's masked CRC-32C of the kind, log number
// (and synced offset) and payload.
func (c walChunk) valid(b []byte) bool {
	end := c.header + c.length
	if end > len(b) {
		return false
	}
	sum := crc32.Checksum(b[6:end], walCRCTable)
	return (sum>>15|sum<<17)+0xa282ead8 == binary.LittleEndian.Uint32(b)
}

// isTrailerPrefix reports whether b is the start of the EOF trailer that a
// closed log logNum ends with: a zero checksum and length, kind 5 and the
// next log's number.
func isTrailerPrefix(b []byte, logNum uint32) bool {
	var t [walHeaderSize]byte
	t[6] = walKindEOF
	binary.LittleEndian.PutUint32(t[7:], logNum+1)
	return len(b) <= len(t) && string(b) == string(t[:len(b)])
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
