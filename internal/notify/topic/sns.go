package topic

import (
	"encoding/json"
	"encoding/xml"
	"strconv"
)

// Namespace of SNS query-protocol responses.
const Namespace = "https://sns.amazonaws.com/doc/2010-03-31/"

// ContentType of SNS responses.
const ContentType = "text/xml"

// The response shapes follow botocore's sns model (query protocol):
// <ActionResponse><ActionResult>...</ActionResult><ResponseMetadata>.
// Maps are <entry><key/><value/></entry> lists, lists are <member> items.

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

type createTopicResponse struct {
	XMLName  xml.Name         `xml:"CreateTopicResponse"`
	Xmlns    string           `xml:"xmlns,attr"`
	TopicArn string           `xml:"CreateTopicResult>TopicArn"`
	Meta     responseMetadata `xml:"ResponseMetadata"`
}

type emptyResponse struct {
	XMLName xml.Name
	Xmlns   string           `xml:"xmlns,attr"`
	Meta    responseMetadata `xml:"ResponseMetadata"`
}

type entry struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type getTopicAttributesResponse struct {
	XMLName    xml.Name         `xml:"GetTopicAttributesResponse"`
	Xmlns      string           `xml:"xmlns,attr"`
	Attributes []entry          `xml:"GetTopicAttributesResult>Attributes>entry"`
	Meta       responseMetadata `xml:"ResponseMetadata"`
}

// xmlEndpoint is RGW's <EndPoint> element.
type xmlEndpoint struct {
	EndpointAddress    string `xml:"EndpointAddress" json:"EndpointAddress"`
	EndpointArgs       string `xml:"EndpointArgs" json:"EndpointArgs"`
	EndpointTopic      string `xml:"EndpointTopic" json:"EndpointTopic"`
	HasStoredSecret    bool   `xml:"HasStoredSecret" json:"HasStoredSecret"`
	Persistent         bool   `xml:"Persistent" json:"Persistent"`
	TimeToLive         string `xml:"TimeToLive" json:"TimeToLive"`
	MaxRetries         string `xml:"MaxRetries" json:"MaxRetries"`
	RetrySleepDuration string `xml:"RetrySleepDuration" json:"RetrySleepDuration"`
}

type xmlTopic struct {
	User       string      `xml:"User"`
	Name       string      `xml:"Name"`
	EndPoint   xmlEndpoint `xml:"EndPoint"`
	TopicArn   string      `xml:"TopicArn"`
	OpaqueData string      `xml:"OpaqueData"`
	Policy     string      `xml:"Policy"`
}

type getTopicResponse struct {
	XMLName xml.Name         `xml:"GetTopicResponse"`
	Xmlns   string           `xml:"xmlns,attr"`
	Topic   xmlTopic         `xml:"GetTopicResult>Topic"`
	Meta    responseMetadata `xml:"ResponseMetadata"`
}

type listTopicsResponse struct {
	XMLName xml.Name         `xml:"ListTopicsResponse"`
	Xmlns   string           `xml:"xmlns,attr"`
	Result  listTopicsResult `xml:"ListTopicsResult"`
	Meta    responseMetadata `xml:"ResponseMetadata"`
}

type listTopicsResult struct {
	Topics    []xmlTopic `xml:"Topics>member"`
	NextToken string     `xml:"NextToken,omitempty"`
}

type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

func render(v any) []byte {
	b, err := xml.Marshal(v)
	if err != nil {
		panic(err) // only fixed struct types are marshalled here
	}
	return append([]byte(xml.Header), b...)
}

func fmtGlobal(v int) string {
	if v == UseGlobal {
		return "None" // RGW's spelling of "use the global option"
	}
	return strconv.Itoa(v)
}

// endpointArgs is RGW's EndpointArgs: the attributes as a query string
// (without secrets).
func endpointArgs(s *Settings) string {
	attrs := s.Attributes(false)
	delete(attrs, AttrPolicy)
	delete(attrs, AttrOpaqueData)
	keys := sortedKeys(attrs)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += "&"
		}
		out += k + "=" + attrs[k]
	}
	return out
}

func toXMLTopic(t *Topic) xmlTopic {
	s := &t.Settings
	return xmlTopic{
		User: t.Owner,
		Name: t.Name,
		EndPoint: xmlEndpoint{
			EndpointAddress:    s.PushEndpoint,
			EndpointArgs:       endpointArgs(s),
			EndpointTopic:      t.Name,
			HasStoredSecret:    s.HasSecret(),
			Persistent:         s.Persistent,
			TimeToLive:         fmtGlobal(s.TimeToLive),
			MaxRetries:         fmtGlobal(s.MaxRetries),
			RetrySleepDuration: fmtGlobal(s.RetrySleepDuration),
		},
		TopicArn:   t.ARN,
		OpaqueData: s.OpaqueData,
		Policy:     s.Policy,
	}
}

// CreateTopicResponse renders the CreateTopic result.
func CreateTopicResponse(arn, requestID string) []byte {
	return render(createTopicResponse{Xmlns: Namespace, TopicArn: arn, Meta: responseMetadata{requestID}})
}

// DeleteTopicResponse renders the DeleteTopic result.
func DeleteTopicResponse(requestID string) []byte {
	return render(emptyResponse{XMLName: xml.Name{Local: "DeleteTopicResponse"}, Xmlns: Namespace, Meta: responseMetadata{requestID}})
}

// SetTopicAttributesResponse renders the SetTopicAttributes result.
func SetTopicAttributesResponse(requestID string) []byte {
	return render(emptyResponse{XMLName: xml.Name{Local: "SetTopicAttributesResponse"}, Xmlns: Namespace, Meta: responseMetadata{requestID}})
}

// GetTopicAttributesResponse renders GetTopicAttributes: RGW's entries
// (User, Name, EndPoint as JSON, TopicArn, OpaqueData, Policy) followed by
// the topic's attributes as set (password left out, URL redacted), so
// `aws sns get-topic-attributes` shows what create-topic was given. The
// caller must refuse the request without TLS when Settings.HasSecret():
// EndPoint carries the push-endpoint as stored.
func GetTopicAttributesResponse(t *Topic, requestID string) []byte {
	x := toXMLTopic(t)
	ep, _ := json.Marshal(x.EndPoint)
	entries := []entry{
		{"User", x.User}, {"Name", x.Name}, {"EndPoint", string(ep)},
		{"TopicArn", x.TopicArn}, {"OpaqueData", x.OpaqueData}, {"Policy", x.Policy},
	}
	attrs := t.Settings.Attributes(false)
	for _, k := range sortedKeys(attrs) {
		if k == AttrOpaqueData || k == AttrPolicy {
			continue // already present under RGW's names
		}
		entries = append(entries, entry{k, attrs[k]})
	}
	return render(getTopicAttributesResponse{Xmlns: Namespace, Attributes: entries, Meta: responseMetadata{requestID}})
}

// GetTopicResponse renders RGW's GetTopic result.
func GetTopicResponse(t *Topic, requestID string) []byte {
	return render(getTopicResponse{Xmlns: Namespace, Topic: toXMLTopic(t), Meta: responseMetadata{requestID}})
}

// ListTopicsResponse renders one page of ListTopics. Each member carries
// TopicArn (all boto3 reads) and RGW's topic fields. nextToken is empty on
// the last page.
func ListTopicsResponse(topics []*Topic, nextToken, requestID string) []byte {
	r := listTopicsResponse{Xmlns: Namespace, Result: listTopicsResult{NextToken: nextToken}, Meta: responseMetadata{requestID}}
	for _, t := range topics {
		r.Result.Topics = append(r.Result.Topics, toXMLTopic(t))
	}
	return render(r)
}

// ErrorResponse renders an SNS error. Codes of 5xx errors get Type
// "Receiver", others "Sender", as AWS does.
func ErrorResponse(e *Error, requestID string) []byte {
	typ := "Sender"
	if e.HTTPStatus >= 500 {
		typ = "Receiver"
	}
	return render(errorResponse{Xmlns: Namespace, Type: typ, Code: e.Code, Message: e.Message, RequestID: requestID})
}
