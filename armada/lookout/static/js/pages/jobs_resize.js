// Column resizing for the jobs table: drag a header's right edge; a double click gives the
// column back its natural width. Widths are kept with the column choice, in this browser
// (localStorage), by column id.
//
// The table is laid out by its content first, then frozen at the measured widths (or the
// stored ones) with `table-layout: fixed`: a resized column keeps its width however its
// cells change, and text too long for it is cut with an ellipsis.

import { h } from "../dom.js";

const STORAGE_KEY = "lookout.jobs.widths";
const MIN_WIDTH = 40;

/** The stored widths in pixels, by column id. */
export function columnWidths() {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEY) || "{}");
    if (stored && typeof stored === "object" && !Array.isArray(stored)) {
      return Object.fromEntries(Object.entries(stored).filter(([, px]) => Number.isFinite(px) && px >= MIN_WIDTH));
    }
  } catch {
    // unreadable widths are no widths
  }
  return {};
}

function saveWidth(id, px) {
  const widths = columnWidths();
  if (px === null) delete widths[id];
  else widths[id] = Math.round(px);
  localStorage.setItem(STORAGE_KEY, JSON.stringify(widths));
}

/** Forget every stored width (the columns menu's reset). */
export function resetWidths() {
  localStorage.removeItem(STORAGE_KEY);
}

/**
 * Make `table`'s columns resizable; `ids[i]` is the id of the header cell `skip + i` (the
 * first `skip` cells, e.g. the selection checkbox, keep their width). Call it once the table
 * is in the document (it measures). `onReset()` redraws after a width is forgotten.
 */
export function resizableColumns(table, ids, { skip = 1, onReset = () => {} } = {}) {
  const headers = [...table.tHead.rows[0].cells];
  const widths = columnWidths();
  const natural = headers.map((th) => th.getBoundingClientRect().width);
  if (!natural.some((width) => width > 0)) return; // not laid out: nothing to measure
  const cols = headers.map((_, at) => {
    const id = ids[at - skip];
    const col = h("col");
    col.style.width = `${Math.ceil(id in widths ? widths[id] : natural[at])}px`;
    return col;
  });
  table.insertBefore(h("colgroup", {}, cols), table.firstChild);
  const fit = () => {
    table.style.width = `${cols.reduce((sum, col) => sum + Number.parseFloat(col.style.width), 0)}px`;
  };
  fit();
  table.classList.add("resizable");
  ids.forEach((id, index) => {
    const col = cols[skip + index];
    const handle = h("span", {
      class: "resize-handle", role: "separator", "aria-orientation": "vertical",
      "aria-label": `Resize column ${headers[skip + index].textContent}`, title: "Drag to resize; double-click for the natural width",
      dataset: { column: id },
      ondblclick: () => {
        saveWidth(id, null);
        onReset();
      },
      onpointerdown: (event) => {
        event.preventDefault();
        handle.setPointerCapture(event.pointerId);
        const startX = event.clientX;
        const start = Number.parseFloat(col.style.width);
        const move = (moved) => {
          col.style.width = `${Math.max(MIN_WIDTH, start + moved.clientX - startX)}px`;
          fit();
        };
        const up = () => {
          handle.removeEventListener("pointermove", move);
          handle.removeEventListener("pointerup", up);
          handle.removeEventListener("pointercancel", up);
          saveWidth(id, Number.parseFloat(col.style.width));
        };
        handle.addEventListener("pointermove", move);
        handle.addEventListener("pointerup", up);
        handle.addEventListener("pointercancel", up);
      },
    });
    headers[skip + index].append(handle);
  });
}
