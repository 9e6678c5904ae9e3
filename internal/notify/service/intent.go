package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/queue"
)

// Link intents (driver.IntentReservation, driver.IntentRecoverer): a write
// with persistent notifications stores, with its link, what its commit
// will do, so that a crash between the link and the commit is repaired at
// the next start. The format is in docs/format/cls.md; the protocol in
// docs/design/delivery.md.

var (
	_ driver.IntentReservation = (*reservation)(nil)
	_ driver.IntentRecoverer   = (*Service)(nil)
)

type ownerID struct {
	id        string
	exclusive bool
}

// SetOwner names the gateway whose intents this service writes and
// resolves. exclusive says no other live process runs under id (the
// server's gateway.id under flock): only then does RecoverIntent resolve
// id's intents, since their writer is known dead. Call it before serving;
// without it no intents are written.
func (s *Service) SetOwner(id string, exclusive bool) {
	s.owner.Store(&ownerID{id: id, exclusive: exclusive})
}

func (s *Service) ownerID() ownerID {
	if o := s.owner.Load(); o != nil {
		return *o
	}
	return ownerID{}
}

// intent is the notifier's part of a link intent (JSON, version 1).
type intent struct {
	V         int            `json:"v"`
	Owner     string         `json:"gw"`
	EventName string         `json:"ev"`
	Bucket    string         `json:"b"`
	BOwner    string         `json:"bo"`
	BucketID  string         `json:"bi"`
	Principal string         `json:"u,omitempty"`
	SourceIP  string         `json:"ip,omitempty"`
	RequestID string         `json:"rq,omitempty"`
	HostID    string         `json:"h,omitempty"`
	Targets   []intentTarget `json:"t"`
	// Obj is the version as known before its link: what recovery announces
	// when the version is gone by then (an answered write whose deferred
	// commit a crash interrupted after a later write replaced it).
	Obj *intentObject `json:"o,omitempty"`
}

type intentObject struct {
	Size  int64  `json:"s"`
	ETag  string `json:"et"`
	MTime int64  `json:"t"` // unix ns
}

// intentTarget is one persistent configuration's pending event.
type intentTarget struct {
	Queue   string `json:"q"`  // queue name (topic)
	Config  string `json:"c"`  // configuration id
	OID     string `json:"o"`  // queue shard object
	Res     uint64 `json:"r"`  // reservation id on it
	Bytes   uint64 `json:"rb"` // reserved bytes
	Created int64  `json:"rc"` // reservation's creation, unix ns (gateway clock)
	EventID string `json:"e"`  // the record's eventId, the same whoever commits
	// EventName is the record's type when not the intent's (event.SentAs).
	EventName string `json:"ev,omitempty"`
}

// Intent implements driver.IntentReservation: nil without persistent
// targets or without an owner. It fixes the records' event ids.
func (r *reservation) Intent(ctx context.Context, obj driver.ObjectInfo) []byte {
	o := r.s.ownerID()
	if len(r.persist) == 0 || o.id == "" {
		return nil
	}
	req := driver.RequestFrom(ctx)
	in := intent{V: 1, Owner: o.id, EventName: r.ev.EventName, Bucket: r.ev.Bucket.Name, BOwner: r.ev.Bucket.Owner,
		BucketID: r.ev.Bucket.ID, Principal: req.Principal, SourceIP: req.SourceIP, RequestID: req.RequestID, HostID: req.HostID,
		Obj: &intentObject{Size: obj.Size, ETag: obj.ETag, MTime: obj.ModTime.UnixNano()}}
	r.eventIDs = make([]string, len(r.persist))
	for i, tg := range r.persist {
		r.eventIDs[i] = event.NewEventID()
		it := intentTarget{Queue: r.s.queueName(tg.t), Config: tg.tc.ID, OID: tg.res.OID(),
			Res: tg.res.ID(), Bytes: tg.res.Bytes(), Created: tg.res.Created().UnixNano(), EventID: r.eventIDs[i]}
		if tg.typ != r.typ {
			it.EventName = tg.typ.Name()
		}
		in.Targets = append(in.Targets, it)
	}
	return in.append(make([]byte, 0, 512))
}

// append encodes in as json.Marshal does (TestIntentEncodingMatchesJSON),
// by hand: json.Marshal's reflection was 70% of Intent's CPU, on every
// notified write.
func (in *intent) append(b []byte) []byte {
	str := func(b []byte, key, v string, omitEmpty bool) []byte {
		if omitEmpty && v == "" {
			return b
		}
		b = append(b, key...)
		return event.AppendJSONString(b, v)
	}
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(in.V), 10)
	b = str(b, `,"gw":`, in.Owner, false)
	b = str(b, `,"ev":`, in.EventName, false)
	b = str(b, `,"b":`, in.Bucket, false)
	b = str(b, `,"bo":`, in.BOwner, false)
	b = str(b, `,"bi":`, in.BucketID, false)
	b = str(b, `,"u":`, in.Principal, true)
	b = str(b, `,"ip":`, in.SourceIP, true)
	b = str(b, `,"rq":`, in.RequestID, true)
	b = str(b, `,"h":`, in.HostID, true)
	b = append(b, `,"t":`...)
	if in.Targets == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range in.Targets {
			t := &in.Targets[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = str(b, `{"q":`, t.Queue, false)
			b = str(b, `,"c":`, t.Config, false)
			b = str(b, `,"o":`, t.OID, false)
			b = append(b, `,"r":`...)
			b = strconv.AppendUint(b, t.Res, 10)
			b = append(b, `,"rb":`...)
			b = strconv.AppendUint(b, t.Bytes, 10)
			b = append(b, `,"rc":`...)
			b = strconv.AppendInt(b, t.Created, 10)
			b = str(b, `,"e":`, t.EventID, false)
			b = str(b, `,"ev":`, t.EventName, true)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if in.Obj != nil {
		b = append(b, `,"o":{"s":`...)
		b = strconv.AppendInt(b, in.Obj.Size, 10)
		b = str(b, `,"et":`, in.Obj.ETag, false)
		b = append(b, `,"t":`...)
		b = strconv.AppendInt(b, in.Obj.MTime, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// RecoverIntent implements driver.IntentRecoverer. Only this gateway's
// intents are resolved, and only when its identity is exclusive (the
// writer is a dead incarnation). A version no longer found has nothing to
// announce: its reservations are released. Otherwise each target's record
// is committed under the original reservation (queue.Resume): if that
// reservation was consumed by the writer's own commit, nothing is added.
func (s *Service) RecoverIntent(ctx context.Context, data []byte, obj driver.ObjectInfo, found, current bool) (bool, error) {
	var in intent
	if err := json.Unmarshal(data, &in); err != nil || in.V != 1 {
		s.log.Warn("undecodable notification intent dropped", "err", err)
		return true, nil
	}
	o := s.ownerID()
	if in.Owner != o.id || !o.exclusive {
		return false, nil
	}
	if !found && (in.Obj == nil || in.Obj.MTime <= 0) {
		// An intent without the version's description (written before
		// deferred commits): nothing visible to announce.
		for _, t := range in.Targets {
			s.queues.Resume(t.OID, t.Res, t.Bytes, time.Unix(0, t.Created)).Abort(ctx)
		}
		return true, nil
	}
	if !found {
		// Replaced or deleted since its link: the write may have been
		// answered (deferred commit), so its event goes out, ordered by
		// its mtime before whatever replaced it.
		obj.Size, obj.ETag, obj.ModTime = in.Obj.Size, in.Obj.ETag, time.Unix(0, in.Obj.MTime).UTC()
		current = false
	}
	r := &reservation{s: s, typ: event.Type("s3:" + in.EventName), ev: driver.PendingEvent{
		Bucket:    driver.BucketInfo{Name: in.Bucket, ID: in.BucketID, Owner: in.BOwner},
		Key:       obj.Key,
		EventName: in.EventName,
	}}
	rctx := driver.WithRequest(ctx, driver.RequestMeta{Principal: in.Principal, SourceIP: in.SourceIP, RequestID: in.RequestID, HostID: in.HostID})
	base := r.record(rctx, obj)
	if !current && !obj.ModTime.IsZero() {
		// A newer version's event may be out already: order this one
		// before it (the consumer's sequencer rule then skips it for the
		// current state, as it should).
		base.S3.Object.Sequencer = event.FormatSequencer(uint64(obj.ModTime.UnixNano()))
	}
	var errs []error
	for _, t := range in.Targets {
		tp, err := s.cachedTopic(ctx, t.Queue)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if tp == nil || !tp.Persistent() {
			s.Counters.Dropped.Add(1)
			continue
		}
		tg := target{tc: &config.TopicConfiguration{ID: t.Config}, t: tp}
		if t.EventName != "" {
			tg.typ = event.Type("s3:" + t.EventName)
		}
		rec := forConfiguration(base, tg, t.EventID)
		b := event.AppendJSON(nil, rec)
		_, err = s.queues.Resume(t.OID, t.Res, t.Bytes, time.Unix(0, t.Created)).Commit(ctx, b)
		switch {
		case err == nil:
			s.Counters.Recovered.Add(1)
		case errors.Is(err, queue.ErrQueueGone):
			s.Counters.Dropped.Add(1)
		default:
			errs = append(errs, fmt.Errorf("notifications: recover event on %s: %w", t.OID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	return true, nil
}
