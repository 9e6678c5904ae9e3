package s3api

import (
	"net/http"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// getObjectTorrent serves GetObjectTorrent (GET /bucket/key?torrent) as
// RGW does with torrents off, its default (rgw_torrent_flag=false): no
// object carries a torrent, so one the caller may read (s3:GetObjectTorrent,
// READ) answers 404 NoSuchKey, an SSE-C one InvalidArgument (RGW refuses
// torrents of those before looking). Missing keys answer as for GetObject.
func (s *Server) getObjectTorrent(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := checkKey(rc.key); err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	info, err := s.headVersion(r.Context(), rc.bucket, rc.key, vid)
	if err != nil {
		markerHeaders(w.Header(), err)
		return err
	}
	if err := s.recheckObjectACL(r, rc, rc.act, info); err != nil {
		return err
	}
	if info.Meta.SSE != nil && info.Meta.SSE.Mode == driver.SSEModeC {
		return s3err.New(s3err.ErrInvalidArgument, "Torrents are not supported for objects encrypted with SSE-C.")
	}
	// About an object the caller may read: nothing to hide (hideMissing).
	rc.missingDecided = true
	return s3err.New(s3err.ErrNoSuchKey, "The object has no torrent.")
}
