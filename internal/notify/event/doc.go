// Package event defines the bucket notification event record Cairn sends
// to endpoints: AWS S3's event message structure as RGW sends it (eventVersion 2.2, one
// record per message inside {"Records":[...]}) plus RGW's extensions
// (bucket id, object metadata and tags, eventId, opaqueData).
//
// It also owns event type names and wildcard matching, the encoding of
// object keys, and the sequencer: a fixed-width hexadecimal counter that
// increases for successive events on one key.
//
// The byte-level description is docs/design/notifications-format.md.
package event
