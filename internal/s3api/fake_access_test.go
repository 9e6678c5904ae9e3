package s3api

import (
	"context"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
)

// The fake backend's access-control methods (Backend's access part).

func (f *fakeBackend) UserByEmail(ctx context.Context, email string) (driver.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.users {
		if email != "" && strings.EqualFold(u.Email, email) {
			return u, nil
		}
	}
	return driver.User{}, driver.ErrNoSuchUser
}

func (b *fakeBucket) instance() driver.Instance {
	return driver.Instance{Name: b.info.Name, ID: b.info.ID, Owner: b.info.Owner, Created: b.info.Created, Access: b.access}
}

func (f *fakeBackend) BucketAuth(ctx context.Context, name string) (*driver.BucketAuth, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(name)
	if err != nil {
		return nil, err
	}
	return driver.NewBucketAuth(b.instance()), nil
}

func (f *fakeBackend) UpdateBucketAccess(ctx context.Context, name string, fn func(driver.Instance, *driver.BucketAccess) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("UpdateBucketAccess")
	b, err := f.bucket(name)
	if err != nil {
		return err
	}
	a := b.access
	if err := fn(b.instance(), &a); err != nil {
		return err
	}
	b.access = a
	return nil
}

func (f *fakeBackend) SetObjectACL(ctx context.Context, bucket, key, vid string, acl authz.ACL) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("SetObjectACL")
	o, err := f.object(bucket, key)
	if err != nil {
		return err
	}
	acl.Owner = authz.Owner{ID: o.info.Owner}
	o.info.Meta = copyMeta(o.info.Meta)
	o.info.Meta.ACL = &acl
	return nil
}
