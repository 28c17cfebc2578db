package upload

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// S3Options say how to reach the store.
type S3Options struct {
	Bucket string
	// Endpoint is the URL of an S3-compatible store (--upload-endpoint),
	// addressed path-style; "" means AWS itself.
	Endpoint string
	// CAPEM is a private CA to verify the endpoint's certificate with
	// (--upload-ca-file); nil means the system's roots.
	CAPEM []byte
	// PartSize is the size of a multipart upload's parts; files no larger
	// go up in one PUT. Default DefaultPartSize.
	PartSize int64
	// StallTimeout ends an attempt whose body has not moved, or whose
	// answer has not come, for this long (a store that stopped answering
	// keeps its connections open). Default DefaultStallTimeout.
	StallTimeout time.Duration
}

// DefaultPartSize is the part size browsertrix-crawler uses too.
const DefaultPartSize = 100 << 20

// DefaultStallTimeout is how long an upload may go without progress. It
// must be longer than the SDK's own back-off between the attempts of one
// call (at most 20 s), during which the body is not read either.
const DefaultStallTimeout = time.Minute

// metaSHA256 is the user metadata key of the whole file's SHA-256 (hex),
// x-amz-meta-sha256 on the wire: S3's own checksums of a multipart object
// are checksums of its parts, not of the file.
const metaSHA256 = "sha256"

// S3 is a Store on S3 or an S3-compatible server, through the AWS SDK.
// Credentials and region come from the standard AWS environment and shared
// config (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION, AWS_PROFILE); the region defaults to us-east-1.
type S3 struct {
	opts   S3Options
	client *s3.Client
	creds  aws.CredentialsProvider
	// whenRequired is set once the store has refused a request carrying
	// the SDK's default integrity checksums: from then on they are sent
	// only where the API requires them.
	whenRequired atomic.Bool
}

var _ Store = (*S3)(nil)

// NewS3 builds the client. It does not reach the store: Check does.
func NewS3(ctx context.Context, o S3Options) (*S3, error) {
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.ResponseHeaderTimeout = o.StallTimeout
	})
	load := []func(*config.LoadOptions) error{config.WithHTTPClient(httpClient)}
	if o.CAPEM != nil {
		load = append(load, config.WithCustomCABundle(bytes.NewReader(o.CAPEM)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("reading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
			so.UsePathStyle = true
		}
	})
	return &S3{opts: o, client: client, creds: cfg.Credentials}, nil
}

// Check asks the store once, at start, whether it takes the credentials
// and has the bucket, by listing the multipart uploads under prefix (a
// permission the shipper needs anyway). A refusal wraps ErrRefused; a
// store that does not answer is another error, which is not fatal.
func (s *S3) Check(ctx context.Context, prefix string) error {
	if s.creds == nil {
		return fmt.Errorf("%w: no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)", ErrRefused)
	}
	if _, err := s.creds.Retrieve(ctx); err != nil {
		return fmt.Errorf("%w: no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE): %w", ErrRefused, err)
	}
	_, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{
		Bucket: aws.String(s.opts.Bucket), Prefix: aws.String(prefix), MaxUploads: aws.Int32(1),
	})
	if err != nil && Reason(err) == ReasonRefused {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return err
}

// Head implements Store.
func (s *S3) Head(ctx context.Context, key string) (Object, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.opts.Bucket), Key: aws.String(key)})
	if err != nil {
		if st := httpStatus(err); st == http.StatusNotFound || st == http.StatusForbidden {
			return Object{}, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return Object{}, err
	}
	return Object{Size: aws.ToInt64(out.ContentLength), SHA256: out.Metadata[metaSHA256]}, nil
}

// Put implements Store. When the store refuses the SDK's default
// integrity checksums, it tries once more without them, and keeps to that.
func (s *S3) Put(ctx context.Context, key string, f *os.File, size int64, sums Sums) error {
	err := s.put(ctx, key, f, size, sums)
	if err != nil && !s.whenRequired.Load() && checksumRefused(err) {
		s.whenRequired.Store(true)
		err = s.put(ctx, key, f, size, sums)
		if err == nil {
			err = errChecksumsOff
		}
	}
	return err
}

// errChecksumsOff tells the shipper that the upload worked once the
// default checksums were left out; it logs that once.
var errChecksumsOff = errors.New("the store refused the SDK's default integrity checksums: sending them only where required")

func (s *S3) put(ctx context.Context, key string, f *os.File, size int64, sums Sums) error {
	ctx, body, stop := watchProgress(ctx, f, size, s.opts.StallTimeout)
	defer stop()
	in := &s3.PutObjectInput{
		Bucket:   aws.String(s.opts.Bucket),
		Key:      aws.String(key),
		Body:     body,
		Metadata: map[string]string{metaSHA256: sums.SHA256},
	}
	err := s.send(ctx, in, size, sums)
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		err = fmt.Errorf("%w for %s: %w", errStalled, s.opts.StallTimeout, err)
	}
	return err
}

func (s *S3) send(ctx context.Context, in *s3.PutObjectInput, size int64, sums Sums) error {
	opts := s.clientOptions()
	if size <= s.opts.PartSize {
		in.ContentLength = aws.Int64(size)
		if !s.whenRequired.Load() {
			// The SDK's default checksum, given rather than computed.
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], sums.CRC32)
			in.ChecksumCRC32 = aws.String(base64.StdEncoding.EncodeToString(b[:]))
		}
		_, err := s.client.PutObject(ctx, in, append(opts, withPayloadHash(sums.SHA256))...)
		return err
	}
	// feature/s3/manager is deprecated in favour of transfermanager, which
	// is still v0; manager reads the parts of a file through its
	// io.ReaderAt, so no part is held in memory.
	//lint:ignore SA1019 see above
	up := manager.NewUploader(s.client, func(u *manager.Uploader) { //nolint:staticcheck // see above
		u.PartSize = s.opts.PartSize
		u.Concurrency = 2
		u.ClientOptions = append(u.ClientOptions, opts...)
		if s.whenRequired.Load() {
			u.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}
	})
	//lint:ignore SA1019 see above
	_, err := up.Upload(ctx, in) //nolint:staticcheck // see above
	return err
}

// withPayloadHash gives SigV4 the SHA-256 of a whole-file PUT's body,
// which the shipper has taken already: over plain HTTP the SDK would
// read and hash the file once more to sign it (over HTTPS it signs
// UNSIGNED-PAYLOAD and needs none).
func withPayloadHash(sha256 string) func(*s3.Options) {
	set := middleware.FinalizeMiddlewareFunc("WarcproxyPayloadHash", func(ctx context.Context, in middleware.FinalizeInput,
		next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		return next.HandleFinalize(v4.SetPayloadHash(ctx, sha256), in)
	})
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			// Before the checksum middleware, which hashes the payload for
			// SigV4 in the same pass as its CRC unless a hash is set.
			return st.Finalize.Insert(set, "AWSChecksum:ComputeInputPayloadChecksum", middleware.Before)
		})
	}
}

func (s *S3) clientOptions() []func(*s3.Options) {
	if !s.whenRequired.Load() {
		return nil
	}
	return []func(*s3.Options){func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}}
}

// Uploads implements Store.
func (s *S3) Uploads(ctx context.Context, prefix string) ([]Upload, error) {
	var ups []Upload
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(s.opts.Bucket), Prefix: aws.String(prefix)}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, u := range out.Uploads {
			ups = append(ups, Upload{Key: aws.ToString(u.Key), ID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
		}
		if !aws.ToBool(out.IsTruncated) {
			return ups, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// Abort implements Store.
func (s *S3) Abort(ctx context.Context, u Upload) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.opts.Bucket), Key: aws.String(u.Key), UploadId: aws.String(u.ID),
	})
	if httpStatus(err) == http.StatusNotFound {
		return nil // gone already
	}
	return err
}

// checksumRefused tells a store that rejects the SDK's default checksums
// (trailing CRC32 in aws-chunked bodies) from other refusals: a 400 or
// 501 that is not about credentials or the bucket.
func checksumRefused(err error) bool {
	st := httpStatus(err)
	if st != http.StatusBadRequest && st != http.StatusNotImplemented {
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AuthorizationHeaderMalformed", "EntityTooLarge":
			return false
		}
	}
	return true
}

// httpStatus is the HTTP status of the store's answer, or 0.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// The reasons a store call fails, as the failures metric labels them.
const (
	ReasonRefused  = "refused"  // credentials, permissions, no such bucket, an untrusted certificate
	ReasonSlowDown = "slowdown" // 503 SlowDown, 429
	ReasonTimeout  = "timeout"  // no answer or no progress in time
	ReasonStore    = "store"    // another error answer (5xx, 4xx)
	ReasonNetwork  = "network"  // no connection
	ReasonConflict = "conflict" // another object under the key
	ReasonVerify   = "verify"   // the object's size or SHA-256 is not the file's
	ReasonLocal    = "local"    // reading the file, or its state
)

// Reason classifies a store call's error.
func Reason(err error) string {
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	st := httpStatus(err)
	var unknownCA x509.UnknownAuthorityError
	var badCert *tls.CertificateVerificationError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &unknownCA) || errors.As(err, &badCert) || errors.As(err, &hostname):
		return ReasonRefused // the store's certificate: --upload-ca-file, or the endpoint's name
	case code == "SlowDown" || st == http.StatusTooManyRequests:
		return ReasonSlowDown
	case code == "NoSuchBucket" || st == http.StatusForbidden || st == http.StatusUnauthorized:
		return ReasonRefused
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errStalled) || isTimeout(err):
		return ReasonTimeout
	case st != 0:
		return ReasonStore
	default:
		return ReasonNetwork
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout() || strings.Contains(err.Error(), "timeout awaiting response headers")
}

// CheckTimeout bounds the start-up check of the store: one that does not
// answer in time is not a configuration error, and the proxy starts.
const CheckTimeout = 5 * time.Second

// CheckRefused asks the store at start whether it takes the credentials
// and has the bucket (see Check), within CheckTimeout. It returns only a
// refusal (wrapping ErrRefused): a store that is down or slow is retried
// by the shipper, and the proxy records meanwhile.
func CheckRefused(ctx context.Context, o S3Options, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	s, err := NewS3(ctx, o)
	if err != nil {
		return err
	}
	if err := s.Check(ctx, t.Prefix); errors.Is(err, ErrRefused) {
		return err
	}
	return nil
}
