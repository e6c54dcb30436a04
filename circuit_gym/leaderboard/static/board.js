document.querySelectorAll("table.sortable").forEach(function (table) {
  var headers = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(headers, function (th, column) {
    th.tabIndex = 0;
    function sort() {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[column];
        return cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
      }
      var numeric = rows.every(function (r) { var k = key(r); return k === "" || !isNaN(Number(k)); });
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === "" || y === "") { return (x === "") - (y === ""); }
        var order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); } });
  });
});
