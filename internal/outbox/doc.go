// Package outbox is an executor host's durable outbox (issue 13, DESIGN.md
// section 9): every agent update, request and exit the host must deliver to
// the daemon is appended here, with an offset, before it is sent, and
// dropped only once the daemon acknowledges that it committed it. After a
// host crash or restart whatever was appended and not acknowledged is still
// here, and the sender replays it from the daemon's last acknowledged
// offset.
//
// # Guarantees
//
//   - Offsets start at 1 and are gapless, across reopens too. A failed
//     Append takes no offset.
//   - A record is durable (written and fsynced) before Append returns its
//     offset, and Read returns only durable records: an offset the daemon
//     has seen never names another record after a crash. With
//     Config.SyncDelay, Append returns (and Read sees the record) once it
//     is written, and the fsync follows within the delay: a crash of the
//     process loses nothing (the kernel holds the written pages), a crash
//     of the machine may cut the log back to the last fsync, so the user
//     must tell a log that ends before an offset its peer saw (the
//     executor host refuses such an attach, see internal/host). Ack
//     always fsyncs the records it covers first.
//   - Concurrent Appends are group-committed: the Append that finds no
//     commit under way leads, on its own goroutine; it takes every Append
//     waiting, writes their frames in one write and syncs once, and goes
//     on while more queue, so throughput grows with the number of
//     appenders and a lone appender hands nothing to another goroutine.
//     AppendBatch hands over many records at once, in order, for one
//     appender to get the same: its records share a commit, and what it
//     appends is always a prefix of them.
//   - Ack is durable before it returns; acknowledged records are never
//     returned again, and segments holding only acknowledged records are
//     deleted.
//   - Unacknowledged bytes are bounded (Config.MaxBytes); past the bound
//     Append fails with errcode.OutboxFull, the caller's cue for
//     back-pressure, and succeeds again once an Ack makes room.
//   - A crash in the middle of a write is repaired on Open (the torn tail
//     of the last segment is cut off and logged). Any other damage is
//     never skipped over: Open keeps every intact record before it, moves
//     the damaged bytes and everything after them aside (never deleting
//     them), numbers the next record after the last one kept, and says so
//     (Damage); a Read that meets damage made later returns the records
//     before it, then a *CorruptError.
//
// # Format
//
// A directory holds segment files, an acked file and a LOCK file (flock:
// one process at a time). A segment is named by the offset of its first
// record, zero-padded to 20 digits so names sort as offsets do
// (00000000000000000001.seg). It starts with a 16-byte header — "TOBX",
// format version (uint32 LE, 1), first offset (uint64 LE) — and continues
// with frames, each
//
//	length uint32 LE | crc uint32 LE | offset uint64 LE | data [length]byte
//
// where crc is the CRC32C (Castagnoli) of length, offset and data. The
// offset is redundant with the frame's place, which is the point: a frame
// read for the wrong offset fails, and after damage the scan can tell
// whether intact records follow. A segment is created under a temporary
// name, synced and renamed, so it never exists without its header; when
// one is full (Config.SegmentBytes) it is synced before the next is
// created, so only the last segment can ever have a torn end. The acked
// file holds the highest acknowledged offset in decimal; it is replaced
// atomically (temporary file, fsync, rename, fsync of the directory).
// Open keeps each live record's frame position in memory (4 bytes a
// record), so Read and Ack never scan. The last records committed (256
// KiB of them, and none once acknowledged) are also kept in memory, so a
// sender that keeps up never reads the file; a record damaged on disk
// while it is there is read as it was written.
//
// # Recovery
//
// Open removes segments whose records are all acknowledged (a crash
// between an Ack and its deletions leaves them) and leftover temporary
// files, then reads every remaining segment and checks every frame. In the
// last segment the first bad frame — cut short, or failing its checksum —
// starts a torn tail, which is truncated, unless an intact frame with a
// later offset follows it: then the damage is not an unfinished write but
// corruption. One exception keeps a machine crash repairable: a write cut
// short by power loss may reach the disk with a hole, a whole 512-byte
// block of zeros, and later pages intact; a zero block between the bad
// frame and the intact one marks such a lost write, and the tail is
// truncated too (those records were never synced, so no Append of them
// returned, unless a SyncDelay let it return before).
//
// Corruption (salvage.go) is any other damage: a bad frame before the
// tail or in an earlier segment, a segment that cannot be opened or read,
// one with a short or wrong header (zero-length included), segments that
// do not continue each other. The log then ends before the first damaged
// record: the frames before it stay, the damaged segment's bytes from
// there on are copied into the quarantine directory (Config.QuarantineDir,
// default <dir>/quarantine, a subdirectory per Open named by the time)
// before the segment is cut, and every later segment is moved there
// whole. Offsets go on gapless from the damage and Damage.FirstLost says
// where; the outbox's user must tell its reader, which may have seen
// records at those offsets before. An acked file that cannot be read or
// parsed, that names an offset before the first segment (segments are
// deleted only once it covers them, so the file is the one at fault), or
// one past the log's end (an Ack syncs its records before it writes the
// file, so either the file changed or the log lost its end, which the
// reader, holding more, learns from the offsets), is moved aside too and
// taken as "nothing held is acknowledged": every record held is read
// again, nothing held is lost, and FirstLost is 0 unless a segment was
// damaged too. A segment holding only acknowledged records is removed
// unread, damaged or not, unless the acked file proves wrong.
//
// Damage made after Open is met by Read, which returns the intact records
// before it and fails at the damaged one with a *CorruptError. SetAside
// then copies the damaged segments aside and Skip makes Read pass over
// the damaged records, up to what the user appends after them (its end of
// the story); the next Open sets the damage aside for good.
//
// If a write or fsync fails, the leader cuts the segment back to its
// committed size, fails the batch with errcode.StoreWriteFailed and goes
// on; if even the cut fails, every later Append fails until the outbox is
// reopened, and the failed batch's records may then reappear: a caller
// that appended them again would find them twice.
//
// # Throughput
//
// An Append costs one fsync shared with the Appends waiting beside it. On
// the development machine (shared, load 2.8; docs/benchmarks.md, "Executor
// host outbox"), 300-byte records: 1 appender 1,914 records/s (a bare
// write+fsync loop: 2,137), 16 appenders 12,549 records/s at 8 records a
// fsync.
package outbox
