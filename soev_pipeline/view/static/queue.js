// The labelling queue's keys (docs/view.md#the-labelling-queue): P should pass, F should
// fail, S skip, 1 to 9 the label. Keys typed into a field are the field's. Without this
// script the page works the same by mouse or Tab and Enter.
(function () {
  "use strict";
  var form = document.querySelector("form.queue-form");
  if (!form) {
    return;
  }
  var typing = { INPUT: true, TEXTAREA: true, SELECT: true, BUTTON: false };
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) {
      return;
    }
    var target = event.target;
    if (target && (typing[target.tagName] || target.isContentEditable)) {
      return;
    }
    var key = event.key.toLowerCase();
    var labels = form.querySelector('select[name="label"]');
    if (/^[1-9]$/.test(key)) {
      if (labels && Number(key) < labels.options.length) {
        labels.selectedIndex = Number(key);
        event.preventDefault();
      }
      return;
    }
    var found = {
      p: 'button[name="passed"][value="true"]',
      f: 'button[name="passed"][value="false"]',
      s: "a.skip"
    }[key];
    var element = found ? form.querySelector(found) : null;
    if (element) {
      event.preventDefault();
      element.click();
    }
  });
})();
