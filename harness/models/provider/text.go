// The text of a message as the APIs write it: a string, or parts and blocks of text, read into
// one text; the providers read their answers by these and the gateway its requests.

package provider

import "github.com/tidwall/gjson"

// AppendText adds one more text of a reply (a text block, a refusal) to the text before it,
// a line apart.
func AppendText(content, text string) string {
	if content == "" || text == "" {
		return content + text
	}
	return content + "\n" + text
}

// ChatText is a Chat Completions message's text: a string, or its text parts one a line.
func ChatText(content gjson.Result) string {
	if content.Type == gjson.String || !content.IsArray() {
		return content.String()
	}
	return BlocksText(content)
}

// BlocksText is the text of a list of text blocks (or parts), one a line, or a string.
func BlocksText(content gjson.Result) string {
	if !content.IsArray() {
		return content.String()
	}
	text := ""
	content.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == "text" {
			text = AppendText(text, b.Get("text").String())
		}
		return true
	})
	return text
}
