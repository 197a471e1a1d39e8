let [a, b, c] = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
let minutes = 0;
while (a + b <= c || a + c <= b || b + c <= a) {
  const longest = Math.max(a, b, c);
  if (a === longest) a++;
  else if (b === longest) b++;
  else c++;
  minutes++;
}
console.log(minutes);
